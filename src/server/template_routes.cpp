#include "server/template_routes.h"

#include "server/http_util.h"
#include "server/openai_request.h"
#include "server/request_builder.h"

namespace lazyattn::server {
namespace {

std::optional<ApiError> apply_template(ServerContext& ctx, const http::HttpRequest& req, std::string& prompt) {
    nlohmann::json body;
    if (auto e = parse_json_body(req, body)) return e;
    if (!body.is_object() || !body.contains("messages")) {
        return invalid_request("'messages' is required", "messages", "missing_required_parameter");
    }
    const auto& chat = ctx.builder.chat_template();
    if (!chat) return invalid_request("the model has no chat template", "messages", "unsupported");
    GenerationRequest gen;
    if (auto e = parse_generation_request(body, true, gen)) return e;
    size_t bytes = 0;
    for (const auto& m : gen.messages) bytes += m.content.size();
    if (!ctx.builder.may_fit_context(bytes)) {  // bounds the template's work, as for a completion
        return invalid_request("the messages (" + std::to_string(bytes) + " bytes) cannot fit the context length of " +
                                   std::to_string(ctx.context_length) + " tokens",
                               "messages", "context_length_exceeded");
    }
    if (gen.messages.empty()) return invalid_request("'messages' is empty", "messages", "invalid_value");
    auto options = chat_render_options(gen);
    if (!options.ok()) return invalid_request(options.status().message(), "messages", "invalid_value");
    auto pieces = chat->render(gen.messages, *options);
    if (!pieces.ok()) return invalid_request(pieces.status().message(), "messages", "invalid_value");
    for (const tokenizer::ChatPiece& p : *pieces) prompt += p.text;
    return std::nullopt;
}

}  // namespace

void handle_apply_template(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res) {
    std::string prompt;
    if (auto e = apply_template(ctx, req, prompt)) return send_error(res, *e);
    send_json(res, 200, {{"prompt", prompt}});
}

}  // namespace lazyattn::server
