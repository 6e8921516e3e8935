#include "server/completion_routes.h"

#include "server/generation_answer.h"
#include "server/http_util.h"
#include "server/openai_renderer.h"
#include "server/openai_request.h"

namespace lazyattn::server {

void handle_completion(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                       const http::ClientLink& link, bool chat) {
    auto renderer = std::make_shared<OpenAiRenderer>(
        ctx.tokenizer, make_response_meta(chat, ctx.config.model_id, ctx.config.system_fingerprint));
    nlohmann::json body;
    // A message's parts are its documents and the question: no list of them may be longer.
    if (auto e = parse_json_body(req, body, JsonBounds{int64_t(ctx.config.max_documents) + 1})) {
        return send_api_error(res, *e, *renderer);
    }
    apply_sampling_defaults(ctx.config.sampling_defaults, SamplingApi::kOpenAI, body);
    GenerationRequest gen;
    if (auto e = parse_generation_request(body, chat, gen)) return send_api_error(res, *e, *renderer);
    if (chat && !gen.reasoning_format) gen.reasoning_format = ctx.config.reasoning_format;
    answer_generation(ctx, req, res, link, std::move(gen), std::move(renderer));
}

}  // namespace lazyattn::server
