#include "server/serving_front.h"

#include <algorithm>
#include <atomic>

#include "server/constraint_request.h"
#include "server/response_budget.h"
#include "server/tool_calls/chat_tools.h"
#include "server/tool_calls/tool_constraint.h"

namespace lazyattn::server {
namespace {

ApiError model_not_found(const std::string& asked, const std::string& served) {
    std::string m = "the model '";
    m += clip_for_message(asked);
    m += "' does not exist (this server runs '" + served + "')";
    return ApiError{404, std::move(m), "invalid_request_error", "model", "model_not_found"};
}

// One response within kMaxResponseBytes: the default max_tokens lowered to fit, a client's
// max_tokens that cannot is a 400 naming the bound.
std::optional<ApiError> fit_response_budget(const GenerationRequest& gen, engine::RagRequest& rag) {
    ResponseShape shape{gen.n, rag.max_tokens, gen.echo ? int32_t(rag.tail.size()) : 0, gen.logprobs};
    if (response_bytes_estimate(shape) <= kMaxResponseBytes) return std::nullopt;
    const int32_t fits = max_tokens_within_budget(shape);
    if (rag.max_tokens_is_default && fits >= 1) {
        rag.max_tokens = fits;
        return std::nullopt;
    }
    const std::string param = gen.max_tokens >= 0 ? "max_tokens" : gen.logprobs >= 0 ? "logprobs" : "n";
    return ApiError{
        400,
        "the response would pass the server's bound of " + std::to_string(kMaxResponseBytes >> 20) +
            " MiB (n x max_tokens x (1 + alternatives) tokens" + (gen.echo ? ", echoed prompt included" : "") +
            "; at most " + std::to_string(fits) + " tokens per choice fit with n=" + std::to_string(gen.n) +
            (gen.logprobs >= 0 ? " and " + std::to_string(gen.logprobs) + " logprob alternatives" : "") + ")",
        "invalid_request_error", param, "response_too_large"};
}

OutputOptions output_options(const tokenizer::Tokenizer& tokenizer, const GenerationRequest& gen,
                             const engine::RagRequest& rag) {
    OutputOptions o;
    o.logprobs = gen.logprobs >= 0;
    o.echo = gen.echo;
    if (gen.echo) {
        o.echo_text = gen.prompt_tokens.empty() ? gen.prompt : tokenizer.decode(gen.prompt_tokens, true);
        o.echo_tokens = rag.tail;
    }
    o.include_usage = gen.include_usage;
    return o;
}

int32_t request_context(const engine::ServingEngine& engine, const FrontSettings& s) {
    const int32_t whole = engine.context_length();
    return s.request_context > 0 ? std::min(s.request_context, whole) : whole;
}

RequestBuilder make_builder(engine::ServingEngine& engine, const tokenizer::Tokenizer& tokenizer,
                            std::optional<tokenizer::ChatTemplate> chat, const FrontSettings& s) {
    const int32_t context = request_context(engine, s);
    const int32_t cap = s.max_tokens_cap > 0 ? s.max_tokens_cap : context;
    return RequestBuilder(
        tokenizer, std::move(chat), context, cap,
        [&engine](const std::string& tenant, const std::string& id) { return engine.document_tokens(tenant, id); },
        s.document_reuse, s.documents_from, s.max_documents, std::make_shared<KnownDocuments>(s.known_documents));
}

}  // namespace

ServingFront::ServingFront(engine::ServingEngine& engine, const tokenizer::Tokenizer& tokenizer,
                           std::optional<tokenizer::ChatTemplate> chat, FrontSettings settings)
    : engine_(engine),
      tokenizer_(tokenizer),
      settings_(std::move(settings)),
      builder_(make_builder(engine, tokenizer, std::move(chat), settings_)),
      constraints_(std::make_unique<grammar::ConstraintCompiler>(tokenizer)) {}

int32_t ServingFront::context_length() const { return request_context(engine_, settings_); }

bool ServingFront::is_model(const std::string& name) const {
    const std::string& id = settings_.model_id;
    if (id.empty() || name == id) return true;
    const std::string ext = ".gguf";
    const bool has_ext = id.size() > ext.size() && id.compare(id.size() - ext.size(), ext.size(), ext) == 0;
    if (has_ext && name == id.substr(0, id.size() - ext.size())) return true;
    return std::find(settings_.aliases.begin(), settings_.aliases.end(), name) != settings_.aliases.end();
}

std::optional<ApiError> ServingFront::fit_max_tokens(const GenerationRequest& gen, engine::RagRequest& rag) const {
    // The builder refused a prompt that fills the context, so at least one token has room.
    const int64_t room = int64_t(context_length()) - rag.num_prompt_tokens();
    if (gen.max_tokens < 0 && settings_.default_max_tokens > 0) {
        const int32_t cap = settings_.max_tokens_cap > 0 ? settings_.max_tokens_cap : settings_.default_max_tokens;
        rag.max_tokens = std::min(settings_.default_max_tokens, cap);
    }
    if (rag.max_tokens > room) {
        if (gen.max_tokens >= 0 && !settings_.clamp_max_tokens) {
            return invalid_request("max_tokens " + std::to_string(gen.max_tokens) + " and the prompt's " +
                                       std::to_string(rag.num_prompt_tokens()) + " tokens pass the context length of " +
                                       std::to_string(context_length()) + " tokens",
                                   "max_tokens", "context_length_exceeded");
        }
        // Generation ends at the request's context (finish_reason "length"), as at the engine's.
        rag.max_tokens = int32_t(std::max<int64_t>(1, room));
    }
    if (settings_.bound_response_bytes) return fit_response_budget(gen, rag);
    return std::nullopt;
}

std::optional<ApiError> ServingFront::prepare(GenerationRequest gen, const std::string& tenant,
                                              const std::function<bool()>& client_gone, PreparedRequest& out) const {
    if (settings_.strict_model_name && !gen.model.empty() && !is_model(gen.model)) {
        return model_not_found(gen.model, settings_.model_id);
    }
    if (Status st = gen.sampling.check_vocabulary(tokenizer_.vocab_size()); !st.ok()) {
        return invalid_request(st.message(), "logit_bias", "invalid_value");
    }
    if (gen.chat && builder_.chat_template()) {  // tools laid in for this template (server/tool_calls/)
        if (auto e = tool_calls::prepare_chat_tools(gen, *builder_.chat_template())) return e;
        if (gen.tools && gen.tools->active()) {
            if (auto e = tool_calls::check_tool_schemas(*gen.tools, *constraints_)) return e;
        }
    }
    if (gen.constraint) {  // compiled (or found cached) here, on the HTTP worker, never the engine thread
        auto compiled = constraints_->compile(*gen.constraint);
        if (!compiled.ok()) return constraint_error(*gen.constraint, compiled.status());
        gen.sampling.constraint = std::move(compiled).value();
    }
    out.known_later.clear();
    auto built = builder_.build(gen, tenant, client_gone, &out.known_later);
    if (!built.ok()) return generation_error(built.status(), gen.chat);
    out.rag = std::move(built).value();
    // A parsed family's markers reach the parser even where they are control tokens.
    if (gen.tools && gen.tools->active()) {
        out.rag.shown_control_tokens = tool_calls::control_markers(gen.tools->format.family, tokenizer_);
    }
    if (auto e = fit_max_tokens(gen, out.rag)) return e;
    out.output = output_options(tokenizer_, gen, out.rag);
    out.context_length = context_length();
    out.rag.report_progress = gen.stream && gen.return_progress;  // llama-server's prompt_progress
    out.gen = std::move(gen);
    return std::nullopt;
}

Expected<SubmittedRequest> ServingFront::submit(PreparedRequest& p, engine::RequestHandle::Callback on_event) const {
    // One group per request, queued at once: the choices compute their recomputed document rows
    // once and share the prompt's cached copy; each gets its own seed (the request's + i, so a
    // seeded request is reproducible).
    static std::atomic<uint64_t> next_group{1};
    const int32_t n = std::max<int32_t>(1, p.gen.n);
    const uint64_t group = n > 1 ? next_group.fetch_add(1) : 0;
    std::vector<engine::RagRequest> choices;
    for (int32_t i = 0; i < n; ++i) {
        engine::RagRequest choice = p.rag;
        choice.choice_group = group;
        choice.sampling.seed = p.rag.sampling.seed + uint64_t(i) * 0x9e3779b97f4a7c15ull;
        choices.push_back(std::move(choice));
    }
    SubmittedRequest s;
    s.bell = std::make_shared<Doorbell>();
    auto handles = engine_.submit_group(std::move(choices),
                                        [bell = s.bell, on_event = std::move(on_event)](const engine::RequestEvent& e) {
                                            bell->ring();
                                            if (on_event) on_event(e);
                                        });
    if (!handles.ok()) return handles.status();
    s.handles = std::move(handles).value();
    // Known only once the engine took the request: a refused one (response budget, the engine's
    // checks, a full queue) makes nothing known, whatever its tenant.
    builder_.note_known(p.known_later, p.rag.tenant);
    return s;
}

std::vector<UsageField> usage_fields(const engine::RequestStats& s) {
    return {{"prompt_tokens", double(s.num_prompt_tokens), true},
            {"completion_tokens", double(s.num_generated), true},
            {"total_tokens", double(s.num_prompt_tokens + s.num_generated), true},
            {"cached_tokens", double(s.reused_tokens), true},
            {"document_tokens", double(s.document_tokens), true},
            {"computed_tokens", double(s.prefill_tokens), true},
            {"recomputed_tokens", double(s.recomputed_tokens), true},
            {"segments_hit", double(s.segments_hit), true},
            {"segments_missed", double(s.segments_missed), true},
            {"segments_from_store", double(s.segments_from_store), true},
            {"preemptions", double(s.preemptions), true},
            {"queue_ms", s.queue_ms, false},
            {"ttft_ms", s.ttft_ms, false},
            {"decode_ms", s.decode_ms, false},
            {"decode_tok_per_s", s.decode_tok_per_s, false}};
}

}  // namespace lazyattn::server
