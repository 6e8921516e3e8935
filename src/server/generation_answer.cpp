#include "server/generation_answer.h"

#include "core/timer.h"
#include "server/generation_stream.h"
#include "server/serving_front.h"
#include "server/token_clock.h"

namespace lazyattn::server {
namespace {

constexpr int kDisconnectPollMs = 200;  // how often a waiting handler looks for a departed client

using Handles = std::vector<std::shared_ptr<engine::RequestHandle>>;

// The next event of `handle`. Every kDisconnectPollMs, whether events flow or not, checks that
// the client is still there and cancels every choice when it left (their blocks return at the
// next step; the engine then finishes them as cancelled).
engine::RequestEvent next_event_or_cancel(ServerContext& ctx, engine::RequestHandle& handle, const Handles& all,
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

// The error a choice that did not end normally answers.
ApiError failed_choice_error(engine::FinishReason reason, const Status& status, bool chat) {
    return reason == engine::FinishReason::kError ? generation_error(status, chat) : cancelled_generation_error();
}

void respond_whole(ServerContext& ctx, http::HttpResponse& res, const Handles& handles, const http::ClientLink& link,
                   ApiRenderer& renderer, bool chat, double t_start_ms) {
    double next_check_ms = now_ms() + kDisconnectPollMs;
    std::vector<engine::RagResult> results;
    results.reserve(handles.size());
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
    std::vector<ChoiceResult> choices;
    std::vector<engine::RequestStats> stats;
    for (size_t i = 0; i < results.size(); ++i) {
        const engine::RagResult& r = results[i];
        if (!engine::finished_normally(r.finish_reason)) {
            return send_api_error(res, failed_choice_error(r.finish_reason, r.status, chat), renderer);
        }
        choices.push_back(ChoiceResult{handles[i].get(), &r});
        stats.push_back(r.stats);
    }
    const engine::RequestStats usage = combined_usage(stats);
    res.status = 200;
    res.content_type = renderer.whole_content_type();
    res.body = renderer.whole_body(choices, usage);
    res.log_fields = access_log_fields(usage);
}

void respond_stream(ServerContext& ctx, http::HttpResponse& res, Handles handles, std::shared_ptr<Doorbell> bell,
                    const http::ClientLink& link, std::shared_ptr<ApiRenderer> renderer, bool chat, double t_start_ms) {
    // The status line waits for every choice's first event, so a request the engine turns away
    // after accepting it (a full queue seen on the engine thread) still gets its proper status.
    double next_check_ms = now_ms() + kDisconnectPollMs;
    std::vector<engine::RequestEvent> firsts;
    for (const auto& h : handles) firsts.push_back(next_event_or_cancel(ctx, *h, handles, link, next_check_ms));
    for (size_t i = 0; i < firsts.size(); ++i) {
        const engine::RequestEvent& first = firsts[i];
        if (first.kind != engine::RequestEvent::Kind::kFinished || engine::finished_normally(first.finish_reason)) {
            continue;
        }
        for (auto& h : handles) h->cancel();
        ctx.metrics.record_request(handles[i]->stats(), first.finish_reason, (now_ms() - t_start_ms) / 1000.0);
        return send_api_error(res, failed_choice_error(first.finish_reason, first.status, chat), *renderer);
    }
    auto stream = std::make_shared<GenerationStream>(ctx, std::move(handles), std::move(firsts), std::move(bell),
                                                     std::move(renderer), chat, t_start_ms);
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

void send_api_error(http::HttpResponse& res, const ApiError& error, const ApiRenderer& renderer) {
    res.status = error.http_status;
    res.stream = nullptr;
    res.content_type = "application/json";
    if (error.http_status == 429 || error.http_status == 503) res.set_header("Retry-After", "1");
    res.body = renderer.error_body(error);
}

void answer_generation(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                       const http::ClientLink& link, GenerationRequest gen, std::shared_ptr<ApiRenderer> renderer) {
    const double t_start_ms = now_ms();
    ActiveRequest active(ctx);
    const std::string tenant = ctx.tenant(req, gen.cache_salt);
    const bool chat = gen.chat;
    if (!gen.verbose) gen.verbose = ctx.config.verbose_replies;  // --verbose: __verbose unless refused
    PreparedRequest prepared;
    if (auto e = ctx.front.prepare(
            std::move(gen), tenant, [&link] { return link.gone(); }, prepared)) {
        if (link.gone()) ctx.metrics.count_disconnect();  // nobody reads it
        return send_api_error(res, *e, *renderer);
    }
    renderer->prepared(prepared);
    auto submitted = ctx.front.submit(prepared);
    if (!submitted.ok()) return send_api_error(res, generation_error(submitted.status(), chat), *renderer);
    if (prepared.gen.stream) {
        respond_stream(ctx, res, std::move(submitted->handles), std::move(submitted->bell), link, std::move(renderer),
                       chat, t_start_ms);
    } else {
        respond_whole(ctx, res, submitted->handles, link, *renderer, chat, t_start_ms);
    }
}

}  // namespace lazyattn::server
