#include "server/request_builder.h"

#include <random>

#include "engine/rag_prompt.h"

namespace lazyattn::server {
namespace {

// A marker no template produces (the same trick as build_rag_request).
constexpr const char* kSlot = "\x01\x02lazyattn-user-content\x02\x01";

uint64_t random_seed() {
    thread_local std::mt19937_64 rng(std::random_device{}());
    return rng();
}

void append(std::vector<int32_t>& to, const std::vector<int32_t>& from) {
    to.insert(to.end(), from.begin(), from.end());
}

}  // namespace

RequestBuilder::RequestBuilder(const tokenizer::Tokenizer& tokenizer, std::optional<tokenizer::ChatTemplate> chat,
                               int32_t context_length, DocumentLookup lookup)
    : tokenizer_(tokenizer), chat_(std::move(chat)), context_length_(context_length), lookup_(std::move(lookup)) {}

std::vector<int32_t> RequestBuilder::document_tokens(const DocumentRef& d) const {
    return tokenizer_.encode(engine::format_document(d.title, d.text), false, false);
}

Status RequestBuilder::add_documents(const std::vector<DocumentRef>& documents, engine::RagRequest& out) const {
    for (size_t i = 0; i < documents.size(); ++i) {
        const DocumentRef& d = documents[i];
        std::vector<int32_t> seg;
        if (d.by_id()) {
            auto cached = lookup_ ? lookup_(d.id) : std::nullopt;
            if (!cached) {
                return not_found("documents[" + std::to_string(i) + "]: unknown document id '" + d.id +
                                        "' (not cached, or evicted since; POST /v1/documents pins a document)");
            }
            seg = std::move(*cached);
        } else {
            seg = document_tokens(d);
        }
        if (!seg.empty()) out.segments.push_back(std::move(seg));
    }
    return {};
}

Status RequestBuilder::split_chat(const std::vector<tokenizer::ChatMessage>& messages, std::string& preamble,
                                  std::string& question, std::string& suffix) const {
    if (!chat_) return unsupported("the model has no chat template; use /v1/completions");
    std::vector<tokenizer::ChatMessage> slotted = messages;
    question = slotted.back().content;
    slotted.back().content = kSlot;
    const std::string rendered = chat_->apply(slotted, true);
    const size_t at = rendered.find(kSlot);
    if (at == std::string::npos) return internal_error("chat template dropped the user message");
    preamble = rendered.substr(0, at);
    suffix = rendered.substr(at + std::string(kSlot).size());
    return {};
}

Expected<engine::RagRequest> RequestBuilder::build(const GenerationRequest& r) const {
    std::string preamble, question = r.prompt, suffix;
    if (r.chat) LA_RETURN_IF_ERROR(split_chat(r.messages, preamble, question, suffix));
    engine::RagRequest req;
    std::vector<int32_t> bos;
    if (tokenizer_.add_bos() && tokenizer_.bos_id() >= 0) bos.push_back(tokenizer_.bos_id());
    // BOS leads segment 0 (the preamble, or a segment of its own before documents) so that no
    // document's tokens depend on where it sits.
    if (!preamble.empty() || (!bos.empty() && !r.documents.empty())) {
        std::vector<int32_t> seg = bos;
        append(seg, tokenizer_.encode(preamble, false, r.chat));  // template text holds special tokens
        bos.clear();
        if (!seg.empty()) req.segments.push_back(std::move(seg));
    }
    LA_RETURN_IF_ERROR(add_documents(r.documents, req));
    req.tail = bos;
    append(req.tail, r.prompt_tokens.empty() ? tokenizer_.encode(question, false, false) : r.prompt_tokens);
    append(req.tail, tokenizer_.encode(suffix, false, true));
    if (req.tail.empty()) return invalid_argument("the prompt is empty");
    req.sampling = r.sampling;
    if (!r.seed_given) req.sampling.seed = random_seed();
    req.max_tokens = r.max_tokens >= 0 ? r.max_tokens : (r.chat ? context_length_ : 16);
    req.stop = r.stop;
    req.ignore_eos = r.ignore_eos;
    return req;
}

}  // namespace lazyattn::server
