#include "server/props_routes.h"

#include "server/http_util.h"
#include "server/native_renderer.h"
#include "server/native_request.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

// A slot's state as llama-server lists it (without its params: those are per request here).
json slot_json(int32_t id, int32_t n_ctx, bool processing) {
    return {{"id", id},
            {"id_task", -1},
            {"n_ctx", n_ctx},
            {"speculative", false},
            {"is_processing", processing},
            // llama-server's is a list (one entry per sequence of the slot).
            {"next_token", json::array({{{"has_next_token", processing},
                                         {"has_new_line", false},
                                         {"n_remain", -1},
                                         {"n_decoded", 0},
                                         {"stopping_word", ""}}})}};
}

// What a /completion request that sets nothing runs with: the native parser's own defaults.
json default_settings(ServerContext& ctx) {
    NativeRequest defaults;
    const int32_t slots = ctx.engine.config().max_num_seqs;
    json body = {{"prompt", " "}};
    apply_sampling_defaults(ctx.config.sampling_defaults, SamplingApi::kNative, body);
    if (parse_native_request(body, ctx.tokenizer, slots, defaults)) return json::object();
    const int32_t n_predict =
        ctx.front.settings().default_max_tokens > 0 ? ctx.front.settings().default_max_tokens : -1;
    return native_generation_settings(defaults.base, defaults.options, ctx.tokenizer, n_predict, ctx.context_length);
}

std::string chat_template_text(const ServerContext& ctx) {
    const auto& chat = ctx.builder.chat_template();
    if (!chat) return "";
    return chat->kind == tokenizer::ChatTemplateKind::kJinja ? chat->origin : chat_template_name(chat->kind);
}

}  // namespace

void handle_props(ServerContext& ctx, http::HttpResponse& res) {
    json slot = slot_json(0, ctx.context_length, false);
    slot["params"] = default_settings(ctx);
    slot["prompt"] = "";
    const std::string& fingerprint = ctx.config.system_fingerprint;
    send_json(res, 200,
              {{"default_generation_settings", std::move(slot)},
               {"total_slots", ctx.engine.config().max_num_seqs},
               {"model_alias", ctx.config.model_id},
               {"model_path", ctx.config.model_path.empty() ? ctx.config.model_id : ctx.config.model_path},
               {"chat_template", chat_template_text(ctx)},
               {"chat_template_caps", json::object()},
               {"modalities", {{"vision", false}, {"audio", false}}},
               {"build_info", fingerprint.empty() ? "lazyattn" : fingerprint},
               {"n_ctx", ctx.context_length},
               {"endpoint_slots", ctx.config.slots_endpoint},
               {"endpoint_props", false},
               {"endpoint_metrics", ctx.config.metrics_endpoint},
               {"is_sleeping", false}});
}

void handle_slots(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res) {
    if (!ctx.config.slots_endpoint) {
        return send_error(res, ApiError{501, "This server does not support slots endpoint (started with --no-slots)",
                                        "not_supported_error", "", "not_implemented"});
    }
    const int32_t slots = ctx.engine.config().max_num_seqs;
    const int32_t running = std::min(ctx.engine.health().num_running, slots);
    if (req.query_param("fail_on_no_slot") == "1" && running >= slots) {
        return send_error(res, ApiError{503, "no slot available", "unavailable_error", "", "no_slot_available"});
    }
    json out = json::array();
    for (int32_t i = 0; i < slots; ++i) out.push_back(slot_json(i, ctx.context_length, i < running));
    send_json(res, 200, out);
}

}  // namespace lazyattn::server
