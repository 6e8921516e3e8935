#include "server/request_builder.h"

#include <algorithm>
#include <random>

#include "engine/rag_prompt.h"

namespace lazyattn::server {
namespace {

uint64_t random_seed() {
    thread_local std::mt19937_64 rng(std::random_device{}());
    return rng();
}

// The longest token in bytes: a text of B bytes tokenizes to at least B / this many tokens.
int32_t longest_token_bytes(const tokenizer::Tokenizer& tokenizer) {
    size_t longest = 1;
    for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
        longest = std::max(longest, tokenizer.token_to_piece(id, false).size());
    }
    return int32_t(longest);
}

// Bytes of client text a request will tokenize.
size_t text_bytes(const GenerationRequest& r) {
    size_t n = r.prompt.size();
    for (const auto& m : r.messages) n += m.content.size();
    for (const auto& d : r.documents) n += d.text.size() + d.title.size();
    return n;
}

}  // namespace

RequestBuilder::RequestBuilder(const tokenizer::Tokenizer& tokenizer, std::optional<tokenizer::ChatTemplate> chat,
                               int32_t context_length, int32_t max_tokens_cap, DocumentLookup lookup,
                               engine::DocumentReuse default_reuse)
    : tokenizer_(tokenizer),
      chat_(std::move(chat)),
      default_reuse_(default_reuse),
      context_length_(context_length),
      max_tokens_cap_(max_tokens_cap),
      max_token_bytes_(longest_token_bytes(tokenizer)),
      lookup_(std::move(lookup)) {}

bool RequestBuilder::may_fit_context(size_t bytes) const {
    return bytes / size_t(max_token_bytes_) < size_t(context_length_);
}

std::vector<int32_t> RequestBuilder::document_tokens(const DocumentRef& d) const {
    if (!d.tokens.empty()) return d.tokens;
    return tokenizer_.encode(engine::format_document(d.title, d.text), false, false);
}

Expected<std::vector<std::vector<int32_t>>> RequestBuilder::document_segments(const std::vector<DocumentRef>& documents,
                                                                              const std::string& tenant) const {
    std::vector<std::vector<int32_t>> segments;
    for (size_t i = 0; i < documents.size(); ++i) {
        const DocumentRef& d = documents[i];
        if (!d.by_id()) {
            segments.push_back(document_tokens(d));
            continue;
        }
        auto cached = lookup_ ? lookup_(tenant, d.id) : std::nullopt;
        if (!cached) {
            return not_found("documents[" + std::to_string(i) + "]: unknown document id '" + d.id +
                             "' (not cached, or evicted since; POST /v1/documents pins a document)");
        }
        segments.push_back(std::move(*cached));
    }
    return segments;
}

Expected<engine::RagRequest> RequestBuilder::build(const GenerationRequest& r, const std::string& tenant) const {
    if (!may_fit_context(text_bytes(r))) {
        return out_of_range("the prompt's text (" + std::to_string(text_bytes(r)) +
                            " bytes) cannot fit the context length of " + std::to_string(context_length_) + " tokens");
    }
    engine::ChatSplit split;  // a completion: no preamble or suffix
    split.question = r.prompt;
    if (r.chat) {
        if (!chat_) return unsupported("the model has no chat template; use /v1/completions");
        LA_ASSIGN_OR_RETURN(split, engine::split_chat(*chat_, r.messages));  // refuses no messages
    }
    LA_ASSIGN_OR_RETURN(auto documents, document_segments(r.documents, tenant));
    const auto question_tokens =
        r.prompt_tokens.empty() ? tokenizer_.encode(split.question, false, false) : r.prompt_tokens;
    LA_ASSIGN_OR_RETURN(
        engine::RagRequest req,
        engine::assemble_rag_request(tokenizer_, split.preamble, std::move(documents), question_tokens, split.suffix));
    req.sampling = r.sampling;
    if (!r.seed_given) req.sampling.seed = random_seed();
    req.max_tokens = std::min(r.max_tokens >= 0 ? r.max_tokens : (r.chat ? context_length_ : 16), max_tokens_cap_);
    req.max_tokens_is_default = r.max_tokens < 0;
    req.tenant = tenant;
    req.sampling.logprobs = r.logprobs;
    // Echo with logprobs scores the prompt: the logprob of every prompt token.
    req.prompt_logprobs = r.echo && r.logprobs >= 0 ? r.logprobs : -1;
    req.stop = engine::make_stop_strings(r.stop);  // one list for every choice
    req.ignore_eos = r.ignore_eos;
    req.reuse = r.document_reuse.value_or(default_reuse_);
    if (!r.document_reuse && !req.first_segment_is_preamble) req.reuse.anchored = false;
    return req;
}

}  // namespace lazyattn::server
