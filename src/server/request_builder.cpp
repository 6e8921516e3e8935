#include "server/request_builder.h"

#include <algorithm>
#include <random>
#include <tuple>

#include "core/log.h"
#include "engine/request/context_overflow.h"
#include "engine/request/rag_prompt.h"
#include "server/api_error.h"

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

// The messages the template renders: as read, but the assistant message the answer continues
// joins its parts with a blank line (PartsJoin::kContinued: llama-server's prefill), where every
// other message joined them with a newline. `copy` holds them when they differ.
const std::vector<tokenizer::ChatMessage>& messages_to_render(const GenerationRequest& r,
                                                              const tokenizer::ChatRenderOptions& o,
                                                              std::vector<tokenizer::ChatMessage>& copy) {
    if (!o.continue_final_message || r.message_parts.size() != r.messages.size() || r.message_parts.back().empty())
        return r.messages;
    copy = r.messages;
    copy.back().content = join_text_parts(r.message_parts.back(), PartsJoin::kContinued);
    return copy;
}

}  // namespace

// How a chat request renders: llama-server's rules. A final assistant message is continued
// (assistant prefill) unless continue_final_message says false; continuing opens no new turn.
Expected<tokenizer::ChatRenderOptions> chat_render_options(const GenerationRequest& r) {
    tokenizer::ChatRenderOptions o;
    const size_t n = r.messages.size();
    const std::string& last_role = r.messages.back().role;
    if (r.continue_final_message) {
        o.continue_final_message = *r.continue_final_message;
        if (o.continue_final_message && last_role != "assistant") {
            return invalid_argument("continue_final_message continues the assistant's message, and messages[" +
                                    std::to_string(n - 1) + "] is the " + clip_for_message(last_role) + "'s");
        }
    } else if (last_role == "assistant") {
        if (n >= 2 && r.messages[n - 2].role == "assistant")
            return invalid_argument("Cannot have 2 or more assistant messages at the end of the list.");
        o.continue_final_message = true;
    }
    o.add_generation_prompt = !o.continue_final_message && r.add_generation_prompt.value_or(true);
    o.kwargs = r.chat_template_kwargs;
    o.tools = r.template_tools;
    return o;
}

RequestBuilder::RequestBuilder(const tokenizer::Tokenizer& tokenizer, std::optional<tokenizer::ChatTemplate> chat,
                               int32_t context_length, int32_t max_tokens_cap, DocumentLookup lookup,
                               engine::DocumentReuse default_reuse, DocumentsFrom documents_from, int32_t max_documents,
                               std::shared_ptr<KnownDocuments> known)
    : tokenizer_(tokenizer),
      chat_(std::move(chat)),
      default_reuse_(default_reuse),
      documents_from_(std::move(documents_from)),
      max_documents_(max_documents),
      context_length_(context_length),
      max_tokens_cap_(max_tokens_cap),
      max_token_bytes_(longest_token_bytes(tokenizer)),
      lookup_(std::move(lookup)),
      known_(std::move(known)) {}

bool RequestBuilder::may_fit_context(size_t bytes) const {
    return bytes / size_t(max_token_bytes_) < size_t(context_length_);
}

void RequestBuilder::note_known(const std::vector<DocumentRef>& documents, const std::string& tenant) const {
    if (!known_) return;
    for (const DocumentRef& d : documents) {
        if (d.tokens.empty() && d.title.empty() && !d.text.empty()) known_->add(tenant, d.text);
    }
}

std::vector<int32_t> RequestBuilder::document_tokens(const DocumentRef& d) const {
    if (!d.tokens.empty()) return d.tokens;
    return engine::document_tokens(tokenizer_, d.title, d.text);
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
            return not_found("documents[" + std::to_string(i) + "]: unknown document id '" + clip_for_message(d.id) +
                             "' (not cached, or evicted since; POST /v1/documents pins a document)");
        }
        segments.push_back(std::move(*cached));
    }
    return segments;
}

Expected<DocumentsFrom> RequestBuilder::documents_from(const GenerationRequest& r) const {
    DocumentsFrom from = documents_from_;
    if (r.documents_source) from.source = *r.documents_source;
    if (r.documents_message) std::tie(from.message, from.index) = *r.documents_message;
    if (r.document_delimiter) from.delimiter = r.document_delimiter;
    if (r.documents_known) from.known = *r.documents_known;
    if (from.source == DocumentsSource::kDelimiter && !from.delimiter) {
        return invalid_argument(
            "documents_from 'delimiter' needs a delimiter (documents_from.delimiter, "
            "document_delimiter, or the server's --document-delimiter)");
    }
    if (!r.chat && (r.documents_source || r.documents_message || r.documents_known) && from.enabled()) {
        return invalid_argument("documents_from reads chat messages; /v1/completions takes `documents`");
    }
    return from;
}

Expected<engine::RagRequest> RequestBuilder::build(const GenerationRequest& r, const std::string& tenant,
                                                   std::function<bool()> client_gone,
                                                   std::vector<DocumentRef>* known_later) const {
    if (!may_fit_context(text_bytes(r))) {
        return out_of_range("the prompt's text (" + std::to_string(text_bytes(r)) +
                            " bytes) cannot fit the context length of " + std::to_string(context_length_) + " tokens");
    }
    if (int32_t(r.documents.size()) > max_documents_) {
        return invalid_argument("the request has " + std::to_string(r.documents.size()) + " documents; at most " +
                                std::to_string(max_documents_) + " per request (--max-documents)");
    }
    LA_ASSIGN_OR_RETURN(const DocumentsFrom from, documents_from(r));
    engine::ChatSplit split;  // a completion: no preamble or suffix
    split.question = r.prompt;
    std::vector<DocumentRef> in_messages;                      // documents found inside a message
    const std::vector<DocumentRef>* documents = &r.documents;  // the request's, unless found
    if (r.chat) {
        if (!chat_) return unsupported("the model has no chat template; use /v1/completions");
        LA_ASSIGN_OR_RETURN(const tokenizer::ChatRenderOptions options, chat_render_options(r));
        std::vector<tokenizer::ChatMessage> rejoined;
        LA_ASSIGN_OR_RETURN(auto pieces, chat_->render(messages_to_render(r, options, rejoined), options));
        if (r.messages.empty()) {
            // No turns (Anthropic's route, as llama-server answers it): no question to place
            // documents before, so the template's whole text (the assistant's opening) follows them.
            split.suffix = std::move(pieces);
        } else {
            // The question the tail starts with: the last message, or the one a continued message
            // answers (the continued text then follows the assistant header in the tail).
            const int32_t question =
                int32_t(r.messages.size()) - (options.continue_final_message && r.messages.size() >= 2 ? 2 : 1);
            MessageDocuments found;
            if (from.enabled()) {
                std::vector<std::string> roles, content(r.messages.size());
                for (const auto& m : r.messages) roles.push_back(m.role);
                for (const auto& p : pieces) {
                    if (p.message >= 0 && p.message < int32_t(content.size())) content[p.message] = p.text;
                }
                MatchBudget budget;  // one for the whole request, whichever messages are searched
                budget.cancelled = std::move(client_gone);
                LA_ASSIGN_OR_RETURN(
                    found, find_message_documents(from, roles, content, r.message_parts, max_documents_, budget));
                // A request that carries `documents` has its documents: known ones quoted in its
                // messages stay text (a source's documents beside `documents` are still a 400).
                if (from.known && r.documents.empty() && known_ && known_->num_documents(tenant) > 0) {
                    LA_RETURN_IF_ERROR(
                        find_known_documents(*known_, tenant, from, roles, content, max_documents_, found));
                } else if (from.known) {
                    log::debug(
                        "documents_from known: no known documents for this tenant yet; the prompt is laid out as sent");
                }
            }
            for (size_t m = 0; m < r.message_parts.size(); ++m) {
                for (const ContentPart& part : r.message_parts[m]) {
                    if (part.text.empty() && !part.id.empty() && int32_t(m) != found.message) {
                        return invalid_argument("messages[" + std::to_string(m) + "] has a part by id ('" +
                                                clip_for_message(part.id) +
                                                "') outside the documents documents_from parts reads");
                    }
                }
            }
            if (found.documents.empty()) {
                if (from.enabled())
                    log::debug("documents_from found no documents; the prompt is laid out as sent",
                               {{"documents_from", from.describe()}});
                const bool writes_question =
                    std::any_of(pieces.begin(), pieces.end(), [&](const auto& p) { return p.message == question; });
                if (writes_question || !r.documents.empty()) {
                    LA_ASSIGN_OR_RETURN(split, engine::split_rendered_chat(std::move(pieces), question));
                } else {
                    // A template that does not write the last message as given (llama-server takes
                    // any text as a template: "--chat-template 'Answer briefly.'"): with no
                    // documents to place around it, its whole text is the prompt, as rendered.
                    split.suffix = std::move(pieces);
                }
            } else {
                if (!r.documents.empty()) {
                    return invalid_argument("the request carries documents both in `documents` and inside messages[" +
                                            std::to_string(found.message) + "] (documents_from): send them one way");
                }
                LA_ASSIGN_OR_RETURN(split, engine::split_rendered_chat(std::move(pieces), found.message));
                if (!found.before.empty()) split.preamble.push_back({found.before, false, found.message});
                split.question = std::move(found.after);
                for (auto& d : found.documents) {
                    DocumentRef ref;
                    if (d.raw) ref.tokens = tokenizer_.encode(d.text, false, false);  // text between, as it is
                    ref.text = std::move(d.text);
                    ref.id = std::move(d.id);
                    in_messages.push_back(std::move(ref));
                }
                documents = &in_messages;
            }
        }
    }
    LA_ASSIGN_OR_RETURN(auto segments, document_segments(*documents, tenant));
    const auto question_tokens =
        r.prompt_tokens.empty() ? tokenizer_.encode(split.question, false, false) : r.prompt_tokens;
    LA_ASSIGN_OR_RETURN(
        engine::RagRequest req,
        engine::assemble_rag_request(tokenizer_, split.preamble, std::move(segments), question_tokens, split.suffix));
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
    // Known only once the request passed the checks that refuse most requests, the engine's
    // context bound included: a refused request, whatever its tenant, makes nothing known.
    LA_RETURN_IF_ERROR(check_context(req));
    if (known_later != nullptr) {
        known_later->insert(known_later->end(), documents->begin(), documents->end());
    } else {
        note_known(*documents, tenant);
    }
    return req;
}

Status RequestBuilder::check_context(const engine::RagRequest& req) const {
    int64_t total = int64_t(req.tail.size());
    for (const auto& s : req.segments) total += int64_t(s.size());
    if (total < context_length_) return Status();
    // The engine's own refusal (Scheduler::validate), which would refuse it next.
    return engine::context_overflow({total, context_length_});
}

}  // namespace lazyattn::server
