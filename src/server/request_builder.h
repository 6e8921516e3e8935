// RequestBuilder: a parsed OpenAI request -> the engine's RagRequest, on the HTTP worker thread.
// The layout is engine::assemble_rag_request's (engine/rag_prompt.h), the one build_rag_request
// uses, applied to whole conversations:
// everything the chat template renders before the last user message's content (system message,
// earlier turns, the user header) is segment 0, preceded by BOS when the model wants one; each
// document is a segment of its own (formatted by format_document, tokenized alone, no special
// tokens parsed from it); the last user message plus the assistant header is the tail. A
// continued final assistant message (continue_final_message, or llama-server's assistant
// prefill) is rendered after that header, in the tail, so the question still starts it.
// Documents found inside a message (documents_from: server/message_documents.h) are laid out the
// same way in place: what the template renders before them is segment 0, what follows the tail. A plain
// completion has no segment 0: documents, then the prompt as the tail. A document named by id
// alone is replaced by the tokens the engine cached for it, so it is a segment hit by design.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/request/rag_request.h"
#include "server/known_documents.h"
#include "server/openai_request.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::server {

// The tokens of a tenant's cached document, by its id (ServingEngine::document_tokens).
using DocumentLookup =
    std::function<std::optional<std::vector<int32_t>>(const std::string& tenant, const std::string& id)>;

// How a chat request renders (llama-server's rules): a final assistant message is continued (an
// assistant prefill) unless continue_final_message says false, and continuing opens no new turn;
// add_generation_prompt (default true) otherwise; chat_template_kwargs. kInvalidArgument for
// continue_final_message after a message that is not the assistant's, or two assistant messages
// at the end. `request.messages` is not empty.
Expected<tokenizer::ChatRenderOptions> chat_render_options(const GenerationRequest& request);

class RequestBuilder {
public:
    // max_tokens_cap: the most tokens any request may generate (larger asks are clamped).
    // default_reuse: for requests that do not say (`document_reuse`); its anchoring applies
    // only where the prompt has a preamble, while a request that asks for it without one is
    // refused by the engine.
    // documents_from: where requests that do not say find documents inside their messages;
    // max_documents: the most documents one request may carry (either way).
    RequestBuilder(const tokenizer::Tokenizer& tokenizer, std::optional<tokenizer::ChatTemplate> chat,
                   int32_t context_length, int32_t max_tokens_cap, DocumentLookup lookup,
                   engine::DocumentReuse default_reuse = {}, DocumentsFrom documents_from = {},
                   int32_t max_documents = kDefaultMaxDocuments, std::shared_ptr<KnownDocuments> known = nullptr);

    // kNotFound for an unknown document id (looked up in `tenant`); kInvalidArgument for an empty
    // tail; kOutOfRange when the texts are too long for the context, found BEFORE tokenizing
    // them when their bytes alone prove it; kUnsupported for a chat request when the model has
    // no chat template; kInvalidArgument for documents both in `documents` and inside the
    // messages, or more than max_documents. max_tokens not given: 16 for completions (as OpenAI), the rest of the
    // context for chat; never above the cap. No seed given: a random one. `client_gone` is
    // polled while delimiters are matched (kCancelled once it says so). `known_later` given: the
    // documents to note as known are appended there for the caller to note once the request is
    // taken (queued); else they are noted here, after every check build() makes.
    Expected<engine::RagRequest> build(const GenerationRequest& request, const std::string& tenant,
                                       std::function<bool()> client_gone = {},
                                       std::vector<DocumentRef>* known_later = nullptr) const;

    // False when `text_bytes` of text cannot tokenize to fewer tokens than the context holds:
    // every token covers at most max_token_bytes() bytes, so such text is refused without
    // spending memory and time on tokenizing it.
    bool may_fit_context(size_t text_bytes) const;
    int32_t max_token_bytes() const { return max_token_bytes_; }
    const std::optional<tokenizer::ChatTemplate>& chat_template() const { return chat_; }

    // A document's tokens as a segment: identical here and in POST /v1/documents, so a document
    // pinned there is hit by requests that carry its text.
    std::vector<int32_t> document_tokens(const DocumentRef& document) const;
    // Indexes the untitled text documents as known to `tenant` (documents_from known). build()
    // calls it last, once the request passed its checks; POST /v1/documents once a batch is taken.
    void note_known(const std::vector<DocumentRef>& documents, const std::string& tenant) const;
    const std::shared_ptr<KnownDocuments>& known_documents() const { return known_; }

private:
    // The request's documents_from, its unset parts taken from the server's.
    Expected<DocumentsFrom> documents_from(const GenerationRequest& request) const;
    // kOutOfRange when the assembled prompt leaves no room in the context, as the engine says.
    Status check_context(const engine::RagRequest& req) const;
    // Each document's tokens, in order; kNotFound for an unknown id.
    Expected<std::vector<std::vector<int32_t>>> document_segments(const std::vector<DocumentRef>& documents,
                                                                  const std::string& tenant) const;

    const tokenizer::Tokenizer& tokenizer_;
    std::optional<tokenizer::ChatTemplate> chat_;
    engine::DocumentReuse default_reuse_;
    DocumentsFrom documents_from_;
    int32_t max_documents_;
    int32_t context_length_;
    int32_t max_tokens_cap_;
    int32_t max_token_bytes_;
    DocumentLookup lookup_;
    std::shared_ptr<KnownDocuments> known_;  // may be null: documents_from known finds nothing
};

}  // namespace lazyattn::server
