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
#include "engine/request/rag_request.h"
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

// The two steps build_rag_request is made of, for callers with whole conversations (the server).
//
// A conversation rendered with the assistant header and split around the last message's content.
struct ChatSplit {
    std::vector<tokenizer::ChatPiece> preamble;  // system message, earlier turns, the last turn's header
    std::string question;                        // the last message's content as rendered (Llama-3 trims it)
    std::vector<tokenizer::ChatPiece> suffix;    // end of the last turn, assistant header
};
// kInvalidArgument for no messages.
Expected<ChatSplit> split_chat(const tokenizer::ChatTemplate& chat,
                               const std::vector<tokenizer::ChatMessage>& messages);
// The same around message `message`'s content of an already rendered conversation (documents
// inside an earlier message: everything after its content, later turns included, is the suffix).
Expected<ChatSplit> split_rendered_chat(std::vector<tokenizer::ChatPiece> pieces, int32_t message);
// Lays a prompt out as segments and tail: segment 0 = BOS (when the model wants one and the
// preamble does not start with it already) + preamble, present when the preamble is non-empty or
// BOS must precede documents, and marked first_segment_is_preamble; each document a segment;
// tail = BOS (if not used yet) + question + suffix. Special tokens come only from the pieces'
// special markup (tokenizer::encode_chat); never from message contents, documents or the question.
Expected<RagRequest> assemble_rag_request(const tokenizer::Tokenizer& tokenizer,
                                          const std::vector<tokenizer::ChatPiece>& preamble,
                                          std::vector<std::vector<int32_t>> documents,
                                          const std::vector<int32_t>& question,
                                          const std::vector<tokenizer::ChatPiece>& suffix);

// "Title: <title>\n<text>\n\n" (or just "<text>\n\n" without a title): how lazyattn lays out a
// retrieved passage.
std::string format_document(const std::string& title, const std::string& text);

// A document's segment tokens: the one rule that makes a document computed anywhere (`lazyattn
// precompute`, POST /v1/documents, Python, a request carrying its text) the same cached segment
// and the same store key. Tokenized alone, no BOS, no special tokens parsed from its text.
std::vector<int32_t> document_tokens(const tokenizer::Tokenizer& tokenizer, const std::string& title,
                                     const std::string& text);
// The same for a document already laid out by format_document.
std::vector<int32_t> formatted_document_tokens(const tokenizer::Tokenizer& tokenizer, const std::string& formatted);

}  // namespace lazyattn::engine
