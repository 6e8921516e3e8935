#include "server/request_builder.h"

#include <random>

#include "engine/rag_prompt.h"

namespace lazyattn::server {
namespace {

uint64_t random_seed() {
    thread_local std::mt19937_64 rng(std::random_device{}());
    return rng();
}

}  // namespace

RequestBuilder::RequestBuilder(const tokenizer::Tokenizer& tokenizer, std::optional<tokenizer::ChatTemplate> chat,
                               int32_t context_length, DocumentLookup lookup)
    : tokenizer_(tokenizer), chat_(std::move(chat)), context_length_(context_length), lookup_(std::move(lookup)) {}

std::vector<int32_t> RequestBuilder::document_tokens(const DocumentRef& d) const {
    return tokenizer_.encode(engine::format_document(d.title, d.text), false, false);
}

Expected<std::vector<std::vector<int32_t>>> RequestBuilder::document_segments(
    const std::vector<DocumentRef>& documents) const {
    std::vector<std::vector<int32_t>> segments;
    for (size_t i = 0; i < documents.size(); ++i) {
        const DocumentRef& d = documents[i];
        if (!d.by_id()) {
            segments.push_back(document_tokens(d));
            continue;
        }
        auto cached = lookup_ ? lookup_(d.id) : std::nullopt;
        if (!cached) {
            return not_found("documents[" + std::to_string(i) + "]: unknown document id '" + d.id +
                             "' (not cached, or evicted since; POST /v1/documents pins a document)");
        }
        segments.push_back(std::move(*cached));
    }
    return segments;
}

Expected<engine::RagRequest> RequestBuilder::build(const GenerationRequest& r) const {
    std::string preamble, question = r.prompt, suffix;
    if (r.chat) {
        if (!chat_) return unsupported("the model has no chat template; use /v1/completions");
        LA_RETURN_IF_ERROR(engine::split_chat(*chat_, r.messages, &preamble, &suffix));  // refuses no messages
        question = r.messages.back().content;
    }
    LA_ASSIGN_OR_RETURN(auto documents, document_segments(r.documents));
    const auto question_tokens = r.prompt_tokens.empty() ? tokenizer_.encode(question, false, false) : r.prompt_tokens;
    LA_ASSIGN_OR_RETURN(engine::RagRequest req, engine::assemble_rag_request(tokenizer_, preamble, std::move(documents),
                                                                          question_tokens, suffix, r.chat));
    req.sampling = r.sampling;
    if (!r.seed_given) req.sampling.seed = random_seed();
    req.max_tokens = r.max_tokens >= 0 ? r.max_tokens : (r.chat ? context_length_ : 16);
    req.stop = r.stop;
    req.ignore_eos = r.ignore_eos;
    return req;
}

}  // namespace lazyattn::server
