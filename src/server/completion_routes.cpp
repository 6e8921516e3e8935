#include "server/completion_routes.h"

#include "core/timer.h"
#include "server/completion_stream.h"
#include "server/http_util.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/sse.h"
#include "server/token_clock.h"

namespace lazyattn::server {
namespace {

constexpr int kDisconnectPollMs = 200;  // how often a waiting handler looks for a departed client

// Body -> checked GenerationRequest -> RagRequest (in the caller's tenant).
std::optional<ApiError> prepare(ServerContext& ctx, const http::HttpRequest& req, bool chat, GenerationRequest& gen,
                                engine::RagRequest& out) {
    nlohmann::json body;
    if (auto e = parse_json_body(req, body)) return e;
    if (auto e = parse_generation_request(body, chat, gen)) return e;
    if (!gen.model.empty() && !ctx.is_model(gen.model)) {
        return ApiError{404,
                        "the model '" + gen.model + "' does not exist (this server runs '" + ctx.config.model_id + "')",
                        "invalid_request_error", "model", "model_not_found"};
    }
    auto built = ctx.builder.build(gen, ctx.tenant(req, gen.cache_salt));
    if (!built.ok()) return generation_error(built.status(), chat);
    out = std::move(built).value();
    return std::nullopt;
}

// The request's next event. Every kDisconnectPollMs, whether events flow or not, checks that the
// client is still there and cancels the request when it left (its blocks return at the next
// step; the engine then finishes it as cancelled).
engine::RequestEvent next_event_or_cancel(ServerContext& ctx, engine::RequestHandle& handle,
                                          const http::ClientLink& link, double& next_check_ms) {
    for (;;) {
        auto e = handle.next_event(kDisconnectPollMs);
        if (now_ms() >= next_check_ms && !handle.cancel_requested()) {
            next_check_ms = now_ms() + kDisconnectPollMs;
            if (link.gone()) {
                handle.cancel();
                ctx.metrics.count_disconnect();
            }
        }
        if (e) return std::move(*e);
    }
}

void respond_whole(ServerContext& ctx, http::HttpResponse& res, engine::RequestHandle& handle,
                   const http::ClientLink& link, const ResponseMeta& meta, double t_start_ms) {
    double next_check_ms = now_ms() + kDisconnectPollMs;
    TokenClock clock;
    for (;;) {
        const engine::RequestEvent e = next_event_or_cancel(ctx, handle, link, next_check_ms);
        if (e.kind == engine::RequestEvent::Kind::kFinished) break;
        clock.on_event(ctx.metrics, e);
    }
    const engine::RagResult result = handle.wait();
    ctx.metrics.record_request(result.stats, result.finish_reason, (now_ms() - t_start_ms) / 1000.0);
    if (result.finish_reason == "error") return send_error(res, generation_error(result.status, meta.chat));
    if (result.finish_reason == "cancelled") return send_error(res, cancelled_generation_error());
    res.status = 200;
    res.content_type = "application/json";
    res.body = completion_body(meta, result);
}

void respond_stream(ServerContext& ctx, http::HttpResponse& res, std::shared_ptr<engine::RequestHandle> handle,
                    const http::ClientLink& link, const ResponseMeta& meta, bool include_usage, double t_start_ms) {
    // The status line waits for the first event, so a request the engine turns away after
    // accepting it (a full queue seen on the engine thread) still gets its proper status.
    double next_check_ms = now_ms() + kDisconnectPollMs;
    engine::RequestEvent first = next_event_or_cancel(ctx, *handle, link, next_check_ms);
    if (first.kind == engine::RequestEvent::Kind::kFinished &&
        (first.finish_reason == "error" || first.finish_reason == "cancelled")) {
        ctx.metrics.record_request(handle->stats(), first.finish_reason, (now_ms() - t_start_ms) / 1000.0);
        return send_error(res, first.finish_reason == "error" ? generation_error(first.status, meta.chat)
                                                              : cancelled_generation_error());
    }
    auto stream =
        std::make_shared<CompletionStream>(ctx, std::move(handle), meta, include_usage, std::move(first), t_start_ms);
    res.status = 200;
    res.content_type = kSseContentType;
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.stream = [stream](http::ChunkSink& sink) { stream->run(sink); };
}

}  // namespace

void handle_completion(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                       const http::ClientLink& link, bool chat) {
    const double t_start_ms = now_ms();
    ActiveRequest active(ctx);
    GenerationRequest gen;
    engine::RagRequest rag;
    if (auto e = prepare(ctx, req, chat, gen, rag)) return send_error(res, *e);
    auto handle = ctx.engine.submit(std::move(rag));
    if (!handle.ok()) return send_error(res, generation_error(handle.status(), chat));
    const ResponseMeta meta = make_response_meta(chat, ctx.config.model_id);
    if (gen.stream) {
        respond_stream(ctx, res, std::move(handle).value(), link, meta, gen.include_usage, t_start_ms);
    } else {
        respond_whole(ctx, res, **handle, link, meta, t_start_ms);
    }
}

}  // namespace lazyattn::server
