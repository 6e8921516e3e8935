#include "server/completion_routes.h"

#include <atomic>

#include "core/timer.h"
#include "server/completion_stream.h"
#include "server/http_util.h"
#include "server/logprobs_json.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/output_options.h"
#include "server/response_budget.h"
#include "server/sse.h"
#include "server/token_clock.h"

namespace lazyattn::server {
namespace {

constexpr int kDisconnectPollMs = 200;  // how often a waiting handler looks for a departed client

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

// Body -> checked GenerationRequest -> RagRequest (in the caller's tenant).
std::optional<ApiError> prepare(ServerContext& ctx, const http::HttpRequest& req, const http::ClientLink& link,
                                bool chat, GenerationRequest& gen, engine::RagRequest& out,
                                std::vector<DocumentRef>& known_later) {
    nlohmann::json body;
    // A message's parts are its documents and the question: no list of them may be longer.
    if (auto e = parse_json_body(req, body, JsonBounds{int64_t(ctx.config.max_documents) + 1})) return e;
    if (auto e = parse_generation_request(body, chat, gen)) return e;
    if (ctx.config.strict_model_name && !gen.model.empty() && !ctx.is_model(gen.model)) {
        std::string m = "the model '";
        m += clip_for_message(gen.model);
        m += "' does not exist (this server runs '" + ctx.config.model_id + "')";
        return ApiError{404, std::move(m), "invalid_request_error", "model", "model_not_found"};
    }
    if (Status st = gen.sampling.check_vocabulary(ctx.tokenizer.vocab_size()); !st.ok()) {
        return invalid_request(st.message(), "logit_bias", "invalid_value");
    }
    auto built = ctx.builder.build(
        gen, ctx.tenant(req, gen.cache_salt), [&link] { return link.gone(); }, &known_later);
    if (!built.ok()) {
        if (built.status().code() == StatusCode::kCancelled) ctx.metrics.count_disconnect();  // nobody reads it
        return generation_error(built.status(), chat);
    }
    out = std::move(built).value();
    return fit_response_budget(gen, out);
}

OutputOptions output_options(ServerContext& ctx, const GenerationRequest& gen, const engine::RagRequest& rag) {
    OutputOptions o;
    o.logprobs = gen.logprobs >= 0;
    o.echo = gen.echo;
    if (gen.echo) {
        o.echo_text = gen.prompt_tokens.empty() ? gen.prompt : ctx.tokenizer.decode(gen.prompt_tokens, true);
        o.echo_tokens = rag.tail;
    }
    o.include_usage = gen.include_usage;
    return o;
}

// Submits the n choices of one request. They share the prompt: their documents are one cached
// copy (a missing one is computed by one job all of them join), only their tails are their own.
// Each choice gets its own seed (the request's seed + i, so a seeded request is reproducible).
Expected<std::vector<std::shared_ptr<engine::RequestHandle>>> submit_choices(ServerContext& ctx,
                                                                             const engine::RagRequest& rag, int32_t n,
                                                                             const std::shared_ptr<Doorbell>& bell) {
    // One group per request, queued at once: the choices compute their recomputed document rows once.
    static std::atomic<uint64_t> next_group{1};
    const uint64_t group = n > 1 ? next_group.fetch_add(1) : 0;
    std::vector<engine::RagRequest> choices;
    for (int32_t i = 0; i < n; ++i) {
        engine::RagRequest choice = rag;
        choice.choice_group = group;
        choice.sampling.seed = rag.sampling.seed + uint64_t(i) * 0x9e3779b97f4a7c15ull;
        choices.push_back(std::move(choice));
    }
    return ctx.engine.submit_group(std::move(choices), [bell](const engine::RequestEvent&) { bell->ring(); });
}

// The next event of `handle`. Every kDisconnectPollMs, whether events flow or not, checks that
// the client is still there and cancels every choice when it left (their blocks return at the
// next step; the engine then finishes them as cancelled).
engine::RequestEvent next_event_or_cancel(ServerContext& ctx, engine::RequestHandle& handle,
                                          const std::vector<std::shared_ptr<engine::RequestHandle>>& all,
                                          const http::ClientLink& link, double& next_check_ms) {
    for (;;) {
        auto e = handle.next_event(kDisconnectPollMs);
        if (now_ms() >= next_check_ms && !handle.cancel_requested()) {
            next_check_ms = now_ms() + kDisconnectPollMs;
            if (link.gone()) {
                for (auto& h : all) h->cancel();
                ctx.metrics.count_disconnect();
            }
        }
        if (e) return std::move(*e);
    }
}

std::vector<std::pair<std::string, double>> access_log_fields(const engine::RequestStats& u) {
    return {{"prompt_tokens", u.num_prompt_tokens},
            {"cached_tokens", u.reused_tokens},
            {"document_tokens", u.document_tokens},
            {"generated_tokens", u.num_generated},
            {"ttft_ms", u.ttft_ms}};
}

ChoiceBody choice_body(ServerContext& ctx, const engine::RequestHandle& handle, const engine::RagResult& r,
                       const OutputOptions& o, bool chat) {
    ChoiceBody c;
    c.finish_reason = r.finish_reason;
    c.text = o.echo ? o.echo_text + r.text : r.text;
    if (!o.logprobs) return c;
    TokenLogprobList tokens;
    if (o.echo) append_prompt_logprobs(handle, o.echo_tokens, tokens);
    for (size_t i = 0; i < r.token_ids.size() && i < r.token_logprobs.size(); ++i) {
        tokens.append(r.token_ids[i], r.token_logprobs[i], r.top_logprobs[i]);
    }
    c.logprobs = chat ? chat_logprobs_json(ctx.tokenizer, tokens) : completion_logprobs_json(ctx.tokenizer, tokens, 0);
    return c;
}

void respond_whole(ServerContext& ctx, http::HttpResponse& res,
                   const std::vector<std::shared_ptr<engine::RequestHandle>>& handles, const http::ClientLink& link,
                   const ResponseMeta& meta, const OutputOptions& output, double t_start_ms) {
    double next_check_ms = now_ms() + kDisconnectPollMs;
    std::vector<engine::RagResult> results;
    for (const auto& h : handles) {
        TokenClock clock;
        for (;;) {
            const engine::RequestEvent e = next_event_or_cancel(ctx, *h, handles, link, next_check_ms);
            if (e.kind == engine::RequestEvent::Kind::kFinished) break;
            clock.on_event(ctx.metrics, e);
        }
        results.push_back(h->wait());
        ctx.metrics.record_request(results.back().stats, results.back().finish_reason,
                                   (now_ms() - t_start_ms) / 1000.0);
    }
    std::vector<ChoiceBody> choices;
    std::vector<engine::RequestStats> stats;
    for (size_t i = 0; i < results.size(); ++i) {
        const engine::RagResult& r = results[i];
        if (r.finish_reason == "error") return send_error(res, generation_error(r.status, meta.chat));
        if (r.finish_reason == "cancelled") return send_error(res, cancelled_generation_error());
        choices.push_back(choice_body(ctx, *handles[i], r, output, meta.chat));
        stats.push_back(r.stats);
    }
    res.status = 200;
    res.content_type = "application/json";
    const engine::RequestStats usage = combined_usage(stats);
    res.body = completion_body(meta, choices, usage);
    res.log_fields = access_log_fields(usage);
}

void respond_stream(ServerContext& ctx, http::HttpResponse& res,
                    std::vector<std::shared_ptr<engine::RequestHandle>> handles, std::shared_ptr<Doorbell> bell,
                    const http::ClientLink& link, const ResponseMeta& meta, OutputOptions output, double t_start_ms) {
    // The status line waits for every choice's first event, so a request the engine turns away
    // after accepting it (a full queue seen on the engine thread) still gets its proper status.
    double next_check_ms = now_ms() + kDisconnectPollMs;
    std::vector<engine::RequestEvent> firsts;
    for (const auto& h : handles) firsts.push_back(next_event_or_cancel(ctx, *h, handles, link, next_check_ms));
    for (size_t i = 0; i < firsts.size(); ++i) {
        const engine::RequestEvent& first = firsts[i];
        if (first.kind != engine::RequestEvent::Kind::kFinished ||
            (first.finish_reason != "error" && first.finish_reason != "cancelled")) {
            continue;
        }
        for (auto& h : handles) h->cancel();
        ctx.metrics.record_request(handles[i]->stats(), first.finish_reason, (now_ms() - t_start_ms) / 1000.0);
        return send_error(res, first.finish_reason == "error" ? generation_error(first.status, meta.chat)
                                                              : cancelled_generation_error());
    }
    auto stream = std::make_shared<CompletionStream>(ctx, std::move(handles), std::move(firsts), std::move(bell), meta,
                                                     std::move(output), t_start_ms);
    res.status = 200;
    res.content_type = kSseContentType;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    // `res` outlives the stream's writing: the transport writes this very response, then logs it.
    res.stream = [stream, &res](http::ChunkSink& sink) {
        stream->run(sink);
        res.log_fields = access_log_fields(stream->usage());
    };
}

}  // namespace

void handle_completion(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                       const http::ClientLink& link, bool chat) {
    const double t_start_ms = now_ms();
    ActiveRequest active(ctx);
    GenerationRequest gen;
    engine::RagRequest rag;
    std::vector<DocumentRef> known_later;
    if (auto e = prepare(ctx, req, link, chat, gen, rag, known_later)) return send_error(res, *e);
    OutputOptions output = output_options(ctx, gen, rag);
    auto bell = std::make_shared<Doorbell>();
    auto handles = submit_choices(ctx, rag, gen.n, bell);
    if (!handles.ok()) return send_error(res, generation_error(handles.status(), chat));
    // Known only once the engine took the request: a refused one (response budget, the engine's
    // checks, a full queue) makes nothing known, whatever its tenant.
    ctx.builder.note_known(known_later, rag.tenant);
    const ResponseMeta meta = make_response_meta(chat, ctx.config.model_id, ctx.config.system_fingerprint);
    if (gen.stream) {
        respond_stream(ctx, res, std::move(handles).value(), std::move(bell), link, meta, std::move(output),
                       t_start_ms);
    } else {
        respond_whole(ctx, res, *handles, link, meta, output, t_start_ms);
    }
}

}  // namespace lazyattn::server
