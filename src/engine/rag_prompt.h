// Building a RagRequest from text: documents become segments, each tokenized alone (no BOS, no
// special tokens recognised inside untrusted text); with a chat template, the system message and
// the opening of the user turn form segment 0 (the same for every request, so it is cached for
// everyone), the documents follow inside the user turn, and the question plus the assistant
// header form the tail.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/rag_request.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::engine {

struct RagPromptText {
    std::string system;                  // "" = the template's default (chat) or none (raw)
    std::vector<std::string> documents;  // already formatted ("Title: ...\n...\n\n")
    std::string question;
};

// chat == nullopt: a raw prompt (documents as-is, then the question). BOS, when the model's
// metadata asks for one, leads segment 0.
Expected<RagRequest> build_rag_request(const tokenizer::Tokenizer& tokenizer,
                                       const std::optional<tokenizer::ChatTemplate>& chat, const RagPromptText& text);

// "Title: <title>\n<text>\n\n" (or just "<text>\n\n" without a title): how lazyattn lays out a
// retrieved passage.
std::string format_document(const std::string& title, const std::string& text);

}  // namespace lazyattn::engine
