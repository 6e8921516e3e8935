#include "server/native_routes.h"

#include <memory>

#include "server/generation_answer.h"
#include "server/http_util.h"
#include "server/native_renderer.h"
#include "server/native_request.h"

namespace lazyattn::server {

void handle_native_completion(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                              const http::ClientLink& link) {
    NativeRequest native;
    {
        nlohmann::json body;
        if (auto e = parse_json_body(req, body, JsonBounds{int64_t(ctx.config.max_documents) + 1})) {
            return send_error(res, *e);
        }
        apply_sampling_defaults(ctx.config.sampling_defaults, SamplingApi::kNative, body);
        const int32_t slots = ctx.engine.config().max_num_seqs;
        if (auto e = parse_native_request(body, ctx.tokenizer, slots, native)) return send_error(res, *e);
    }  // the body's JSON is freed before generating
    nlohmann::json results = nlohmann::json::array();
    std::vector<std::pair<std::string, double>> log_fields;
    for (size_t i = 0; i < native.prompts.size(); ++i) {
        GenerationRequest gen = native.request_for(i);
        // n_predict -1 (or none): until a stop or the context's end, unless the server sets a
        // default (llama-server's --n-predict); the front clamps to the context and the cap.
        if (gen.max_tokens < 0 && ctx.front.settings().default_max_tokens <= 0) gen.max_tokens = ctx.context_length;
        NativeContext c;
        c.model = ctx.config.model_id;
        c.n_ctx = ctx.context_length;
        c.id_slot = native.options.id_slot >= 0 ? native.options.id_slot : 0;
        c.index = int32_t(i);
        auto renderer = std::make_shared<NativeRenderer>(ctx.tokenizer, native.options, std::move(c));
        if (!native.prompt_list) return answer_generation(ctx, req, res, link, std::move(gen), renderer);
        http::HttpResponse one;
        answer_generation(ctx, req, one, link, std::move(gen), renderer);
        if (one.status != 200) {
            res.status = one.status;
            res.content_type = one.content_type;
            res.body = std::move(one.body);
            res.headers = std::move(one.headers);
            return;
        }
        results.push_back(renderer->take_last_result());
        // The access log counts the whole request: every prompt's tokens summed.
        if (log_fields.empty()) {
            log_fields = std::move(one.log_fields);
        } else {
            for (size_t f = 0; f < log_fields.size() && f < one.log_fields.size(); ++f) {
                log_fields[f].second += one.log_fields[f].second;
            }
        }
    }
    send_json(res, 200, results);
    res.log_fields = std::move(log_fields);
}

}  // namespace lazyattn::server
