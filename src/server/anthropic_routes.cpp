#include "server/anthropic_routes.h"

#include "server/anthropic_renderer.h"
#include "server/anthropic_request.h"
#include "server/generation_answer.h"
#include "server/http_util.h"

namespace lazyattn::server {
namespace {

// Content blocks one message may carry beyond its documents (the question, text around them).
constexpr int64_t kTextBlocksBesideDocuments = 16;

// The body, checked and read; an error (already answered in Anthropic's shape) otherwise.
bool read_request(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res, AnthropicRoute route,
                  GenerationRequest& gen) {
    const AnthropicRenderer errors("");
    nlohmann::json body;
    // A message's blocks are its documents and a few text blocks: no content list may be longer.
    const JsonBounds bounds{int64_t(ctx.config.max_documents) + kTextBlocksBesideDocuments};
    if (auto e = parse_json_body(req, body, bounds)) {
        send_api_error(res, *e, errors);
        return false;
    }
    if (route == AnthropicRoute::kMessages) {
        apply_sampling_defaults(ctx.config.sampling_defaults, SamplingApi::kAnthropic, body);
    }
    if (auto e = parse_anthropic_request(body, route, gen)) {
        send_api_error(res, *e, errors);
        return false;
    }
    return true;
}

}  // namespace

void handle_messages(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                     const http::ClientLink& link) {
    GenerationRequest gen;
    if (!read_request(ctx, req, res, AnthropicRoute::kMessages, gen)) return;
    // Anthropic's responses name the model the request asked for.
    auto renderer = std::make_shared<AnthropicRenderer>(gen.model);
    answer_generation(ctx, req, res, link, std::move(gen), std::move(renderer));
}

void handle_count_tokens(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                         const http::ClientLink& link) {
    GenerationRequest gen;
    if (!read_request(ctx, req, res, AnthropicRoute::kCountTokens, gen)) return;
    ActiveRequest active(ctx);
    // Laid out as /v1/messages would lay it out (documents, template, known documents), not queued.
    const std::string tenant = ctx.tenant(req, gen.cache_salt);
    PreparedRequest prepared;
    if (auto e = ctx.front.prepare(
            std::move(gen), tenant, [&link] { return link.gone(); }, prepared)) {
        return send_api_error(res, *e, AnthropicRenderer(""));
    }
    send_json(res, 200, {{"input_tokens", prepared.rag.num_prompt_tokens()}});
}

}  // namespace lazyattn::server
