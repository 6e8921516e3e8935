#include "engine/request/rag_prompt.h"

#include <algorithm>
#include <iterator>

namespace lazyattn::engine {

std::string format_document(const std::string& title, const std::string& text) {
    return title.empty() ? text + "\n\n" : "Title: " + title + "\n" + text + "\n\n";
}

std::vector<int32_t> formatted_document_tokens(const tokenizer::Tokenizer& tokenizer, const std::string& formatted) {
    return tokenizer.encode(formatted, /*add_special=*/false, /*parse_special=*/false);
}

std::vector<int32_t> document_tokens(const tokenizer::Tokenizer& tokenizer, const std::string& title,
                                     const std::string& text) {
    return formatted_document_tokens(tokenizer, format_document(title, text));
}

Expected<ChatSplit> split_rendered_chat(std::vector<tokenizer::ChatPiece> pieces, int32_t message) {
    auto at = std::find_if(pieces.begin(), pieces.end(), [message](const auto& p) { return p.message == message; });
    if (at == pieces.end()) {
        return invalid_argument("the chat template does not write the content of messages[" + std::to_string(message) +
                                "] as given (nor stripped), so documents cannot be placed around it");
    }
    ChatSplit split;
    split.preamble.assign(std::make_move_iterator(pieces.begin()), std::make_move_iterator(at));
    split.question = std::move(at->text);
    split.suffix.assign(std::make_move_iterator(at + 1), std::make_move_iterator(pieces.end()));
    return split;
}

Expected<ChatSplit> split_chat(const tokenizer::ChatTemplate& chat,
                               const std::vector<tokenizer::ChatMessage>& messages) {
    if (messages.empty()) return invalid_argument("the conversation is empty");
    LA_ASSIGN_OR_RETURN(auto pieces, chat.render(messages, true));
    return split_rendered_chat(std::move(pieces), int32_t(messages.size()) - 1);
}

Expected<RagRequest> assemble_rag_request(const tokenizer::Tokenizer& tok,
                                          const std::vector<tokenizer::ChatPiece>& preamble,
                                          std::vector<std::vector<int32_t>> documents,
                                          const std::vector<int32_t>& question,
                                          const std::vector<tokenizer::ChatPiece>& suffix) {
    RagRequest req;
    std::vector<int32_t> bos;
    if (tok.add_bos() && tok.bos_id() >= 0) bos.push_back(tok.bos_id());
    // BOS leads segment 0 (the preamble, or a segment of its own before documents) so that no
    // document's tokens depend on where it sits.
    if (!preamble.empty() || (!bos.empty() && !documents.empty())) {
        auto seg = tokenizer::encode_chat(tok, preamble);
        // A template that writes BOS itself (Llama-3's <|begin_of_text|>) has it already.
        if (!seg.empty() && !bos.empty() && seg.front() == bos.front()) bos.clear();
        seg.insert(seg.begin(), bos.begin(), bos.end());
        bos.clear();
        if (!seg.empty()) {
            req.segments.push_back(std::move(seg));
            req.first_segment_is_preamble = true;
        }
    }
    for (auto& doc : documents) {
        if (!doc.empty()) req.segments.push_back(std::move(doc));
    }
    req.tail = bos;
    req.tail.insert(req.tail.end(), question.begin(), question.end());
    const auto tail_suffix = tokenizer::encode_chat(tok, suffix);
    req.tail.insert(req.tail.end(), tail_suffix.begin(), tail_suffix.end());
    if (req.tail.empty()) return invalid_argument("the prompt is empty");
    return req;
}

Expected<RagRequest> build_rag_request(const tokenizer::Tokenizer& tok,
                                       const std::optional<tokenizer::ChatTemplate>& chat, const RagPromptText& text) {
    ChatSplit split;
    split.question = text.question;
    if (chat) {
        std::vector<tokenizer::ChatMessage> messages;
        if (!text.system.empty()) messages.push_back({"system", text.system});
        messages.push_back({"user", text.question});
        LA_ASSIGN_OR_RETURN(split, split_chat(*chat, messages));
    } else if (!text.system.empty()) {
        split.preamble.push_back({text.system + "\n\n"});  // plain text: no special tokens
    }
    std::vector<std::vector<int32_t>> documents;
    for (const auto& doc : text.documents) documents.push_back(formatted_document_tokens(tok, doc));
    return assemble_rag_request(tok, split.preamble, std::move(documents), tok.encode(split.question, false, false),
                                split.suffix);
}

}  // namespace lazyattn::engine
