#include "server/tokenize_routes.h"

#include "core/utf8.h"
#include "server/http_util.h"
#include "server/openai_request.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

std::optional<ApiError> read_flag(const json& body, const char* key, bool& out) {
    if (!body.contains(key) || body.at(key).is_null()) return std::nullopt;
    if (!body.at(key).is_boolean())
        return invalid_request(std::string("'") + key + "' must be a boolean", key, "invalid_type");
    out = body.at(key).get<bool>();
    return std::nullopt;
}

// The tokens of the request's text: "content" (llama.cpp) or "prompt" (vLLM) tokenized as
// completions tokenize a prompt (special-token text stays text), or "messages" rendered with the
// chat template (vLLM) where only the template's own markup becomes special tokens.
std::optional<ApiError> tokens_of(ServerContext& ctx, json& body, bool add_special, std::vector<int32_t>& out) {
    const char* key = body.contains("content") ? "content" : body.contains("prompt") ? "prompt" : nullptr;
    if (key != nullptr) {
        std::string text;
        if (!body.at(key).is_string())
            return invalid_request(std::string("'") + key + "' must be a string", key, "invalid_type");
        text = body.at(key).get<std::string>();
        if (!text::is_valid_utf8(text)) return invalid_request("the text is not valid UTF-8", key, "invalid_utf8");
        if (!ctx.builder.may_fit_context(text.size())) {  // bounds the tokenizer's work, as for prompts
            return invalid_request(
                "the text cannot fit the context length of " + std::to_string(ctx.context_length) + " tokens", key,
                "context_length_exceeded");
        }
        out = ctx.tokenizer.encode(text, add_special, false);
        return std::nullopt;
    }
    if (!body.contains("messages")) {
        return invalid_request("'content', 'prompt' or 'messages' is required", "content",
                               "missing_required_parameter");
    }
    if (!ctx.builder.chat_template())
        return invalid_request("the model has no chat template", "messages", "unsupported");
    GenerationRequest gen;
    json messages = json::object();
    messages["messages"] = std::move(body.at("messages"));  // moved, not copied
    if (auto e = parse_generation_request(messages, true, gen)) return e;
    bool generation_prompt = true;
    if (auto e = read_flag(body, "add_generation_prompt", generation_prompt)) return e;
    // The same bound as a completion's prompt, before rendering or tokenizing anything.
    size_t bytes = 0;
    for (const auto& m : gen.messages) bytes += m.content.size();
    if (!ctx.builder.may_fit_context(bytes)) {
        return invalid_request("the messages (" + std::to_string(bytes) + " bytes) cannot fit the context length of " +
                                   std::to_string(ctx.context_length) + " tokens",
                               "messages", "context_length_exceeded");
    }
    auto pieces = ctx.builder.chat_template()->render(gen.messages, generation_prompt);
    if (!pieces.ok()) return invalid_request(pieces.status().message(), "messages", "invalid_value");
    out = tokenizer::encode_chat(ctx.tokenizer, *pieces);
    if (int64_t(out.size()) > ctx.context_length) {  // the template's own text can add tokens
        return invalid_request("the rendered messages have " + std::to_string(out.size()) +
                                   " tokens; the context length is " + std::to_string(ctx.context_length),
                               "messages", "context_length_exceeded");
    }
    return std::nullopt;
}

// A token's text as llama-server gives it: a string when it is valid UTF-8 alone, else its bytes
// (a token that is part of a character would otherwise come back as U+FFFD).
json piece_json(const std::string& piece) {
    if (text::is_valid_utf8(piece)) return piece;
    json bytes = json::array();
    for (const unsigned char c : piece) bytes.push_back(int(c));
    return bytes;
}

}  // namespace

void handle_tokenize(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res) {
    ActiveRequest active(ctx);  // graceful shutdown waits for it
    json body;
    if (auto e = parse_json_body(req, body, JsonBounds{int64_t(ctx.config.max_documents) + 1})) {
        return send_error(res, *e);
    }
    if (!body.is_object())
        return send_error(res, invalid_request("the request body must be a JSON object", "", "invalid_type"));
    bool add_special = false, with_pieces = false;
    if (auto e = read_flag(body, "add_special", add_special)) return send_error(res, *e);
    if (auto e = read_flag(body, "add_special_tokens", add_special)) return send_error(res, *e);
    if (auto e = read_flag(body, "with_pieces", with_pieces)) return send_error(res, *e);
    std::vector<int32_t> ids;
    if (auto e = tokens_of(ctx, body, add_special, ids)) return send_error(res, *e);
    json tokens = json::array();
    for (int32_t id : ids) {
        if (with_pieces) {
            tokens.push_back({{"id", id}, {"piece", piece_json(ctx.tokenizer.token_to_piece(id, true))}});
        } else {
            tokens.push_back(id);
        }
    }
    send_json(res, 200, {{"tokens", tokens}, {"count", ids.size()}, {"max_model_len", ctx.context_length}});
}

void handle_detokenize(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res) {
    ActiveRequest active(ctx);
    json body;
    if (auto e = parse_json_body(req, body)) return send_error(res, *e);
    if (!body.is_object() || !body.contains("tokens")) {
        return send_error(res, invalid_request("'tokens' is required", "tokens", "missing_required_parameter"));
    }
    // A context's worth at most: the output is then bounded by context x the longest token.
    if (body.at("tokens").is_array() && body.at("tokens").size() > size_t(ctx.context_length)) {
        return send_error(res, invalid_request("'tokens' holds " + std::to_string(body.at("tokens").size()) +
                                                   " ids; at most the context length (" +
                                                   std::to_string(ctx.context_length) + ") are detokenized",
                                               "tokens", "context_length_exceeded"));
    }
    std::vector<int32_t> ids;
    if (auto e = parse_token_ids(body.at("tokens"), "tokens", ctx.tokenizer.vocab_size(), ids))
        return send_error(res, *e);
    const std::string text = ctx.tokenizer.decode(ids, true);
    send_json(res, 200, {{"content", text}, {"prompt", text}});
}

}  // namespace lazyattn::server
