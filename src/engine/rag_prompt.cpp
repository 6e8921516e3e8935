#include "engine/rag_prompt.h"

namespace lazyattn::engine {
namespace {

// A marker no template produces: the rendered chat is split around it.
constexpr const char* kSlot = "\x01\x02lazyattn-user-content\x02\x01";

}  // namespace

std::string format_document(const std::string& title, const std::string& text) {
    return title.empty() ? text + "\n\n" : "Title: " + title + "\n" + text + "\n\n";
}

Expected<RagRequest> build_rag_request(const tokenizer::Tokenizer& tok, const std::optional<tokenizer::ChatTemplate>& chat,
                                       const RagPromptText& text) {
    RagRequest req;
    std::string preamble, suffix;
    if (chat) {
        std::vector<tokenizer::ChatMessage> messages;
        if (!text.system.empty()) messages.push_back({"system", text.system});
        messages.push_back({"user", kSlot});
        const std::string rendered = chat->apply(messages, true);
        const size_t at = rendered.find(kSlot);
        if (at == std::string::npos) return internal_error("chat template dropped the user message");
        preamble = rendered.substr(0, at);
        suffix = rendered.substr(at + std::string(kSlot).size());
    } else if (!text.system.empty()) {
        preamble = text.system + "\n\n";
    }
    // Template text holds special tokens; user-supplied text never does.
    std::vector<int32_t> bos;
    if (tok.add_bos() && tok.bos_id() >= 0) bos.push_back(tok.bos_id());
    // BOS (when the model wants one) leads segment 0: the preamble, or a segment of its own, so
    // that no document's tokens depend on where it sits.
    if (!preamble.empty() || (!bos.empty() && !text.documents.empty())) {
        auto seg = tok.encode(preamble, false, chat.has_value());
        seg.insert(seg.begin(), bos.begin(), bos.end());
        bos.clear();
        if (!seg.empty()) req.segments.push_back(std::move(seg));
    }
    for (const auto& doc : text.documents) {
        auto seg = tok.encode(doc, false, false);
        if (!seg.empty()) req.segments.push_back(std::move(seg));
    }
    req.tail = bos;
    const auto question = tok.encode(text.question, false, false);
    req.tail.insert(req.tail.end(), question.begin(), question.end());
    const auto tail_suffix = tok.encode(suffix, false, true);
    req.tail.insert(req.tail.end(), tail_suffix.begin(), tail_suffix.end());
    if (req.tail.empty()) return invalid_argument("the question is empty");
    return req;
}

}  // namespace lazyattn::engine
