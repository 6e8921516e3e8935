#include "engine/rag_prompt.h"

namespace lazyattn::engine {
namespace {

// A marker no template produces: the rendered chat is split around it.
constexpr const char* kSlot = "\x01\x02lazyattn-user-content\x02\x01";

}  // namespace

std::string format_document(const std::string& title, const std::string& text) {
    return title.empty() ? text + "\n\n" : "Title: " + title + "\n" + text + "\n\n";
}

Status split_chat(const tokenizer::ChatTemplate& chat, const std::vector<tokenizer::ChatMessage>& messages,
                  std::string* preamble, std::string* suffix) {
    if (messages.empty()) return invalid_argument("the conversation is empty");
    std::vector<tokenizer::ChatMessage> slotted = messages;
    slotted.back().content = kSlot;
    const std::string rendered = chat.apply(slotted, true);
    const size_t at = rendered.find(kSlot);
    if (at == std::string::npos) return internal_error("chat template dropped the user message");
    *preamble = rendered.substr(0, at);
    *suffix = rendered.substr(at + std::string(kSlot).size());
    return {};
}

Expected<RagRequest> assemble_rag_request(const tokenizer::Tokenizer& tok, const std::string& preamble,
                                          std::vector<std::vector<int32_t>> documents,
                                          const std::vector<int32_t>& question, const std::string& suffix,
                                          bool template_text) {
    RagRequest req;
    std::vector<int32_t> bos;
    if (tok.add_bos() && tok.bos_id() >= 0) bos.push_back(tok.bos_id());
    // BOS leads segment 0 (the preamble, or a segment of its own before documents) so that no
    // document's tokens depend on where it sits.
    if (!preamble.empty() || (!bos.empty() && !documents.empty())) {
        auto seg = tok.encode(preamble, false, template_text);
        seg.insert(seg.begin(), bos.begin(), bos.end());
        bos.clear();
        if (!seg.empty()) req.segments.push_back(std::move(seg));
    }
    for (auto& doc : documents) {
        if (!doc.empty()) req.segments.push_back(std::move(doc));
    }
    req.tail = bos;
    req.tail.insert(req.tail.end(), question.begin(), question.end());
    const auto tail_suffix = tok.encode(suffix, false, template_text);
    req.tail.insert(req.tail.end(), tail_suffix.begin(), tail_suffix.end());
    if (req.tail.empty()) return invalid_argument("the prompt is empty");
    return req;
}

Expected<RagRequest> build_rag_request(const tokenizer::Tokenizer& tok, const std::optional<tokenizer::ChatTemplate>& chat,
                                       const RagPromptText& text) {
    std::string preamble, suffix;
    if (chat) {
        std::vector<tokenizer::ChatMessage> messages;
        if (!text.system.empty()) messages.push_back({"system", text.system});
        messages.push_back({"user", text.question});
        LA_RETURN_IF_ERROR(split_chat(*chat, messages, &preamble, &suffix));
    } else if (!text.system.empty()) {
        preamble = text.system + "\n\n";
    }
    std::vector<std::vector<int32_t>> documents;
    for (const auto& doc : text.documents) documents.push_back(tok.encode(doc, false, false));
    return assemble_rag_request(tok, preamble, std::move(documents), tok.encode(text.question, false, false), suffix,
                                chat.has_value());
}

}  // namespace lazyattn::engine
