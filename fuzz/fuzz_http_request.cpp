// libFuzzer target: raw bytes from a client, all the way to a checked GenerationRequest. The
// first byte picks how the input is split into reads (the parser must give the same result for
// any split), the rest is what arrives on the socket: request heads, chunked and compressed
// bodies, pipelines; each complete request's body then goes through the JSON checks and the
// request parser of its route (OpenAI, llama-server's native, OpenAI Responses, Anthropic), as
// the server runs them; its key headers go through the key matcher.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/byte_unicode.h"
#include "http/request_parser.h"
#include "server/anthropic_request.h"
#include "server/api_keys.h"
#include "server/http_util.h"
#include "server/native_request.h"
#include "server/openai_request.h"
#include "server/responses_request.h"
#include "tokenizer/vocab.h"

using namespace lazyattn;

void check_keys(const http::HttpRequest& request);

// A byte-level vocabulary (the 256 bytes and an end token): what /completion's parser tokenizes
// prompt strings and logit_bias texts with.
const tokenizer::Tokenizer& byte_tokenizer() {
    static const std::unique_ptr<tokenizer::Tokenizer> tok = [] {
        tokenizer::VocabData d;
        d.model = "gpt2";
        d.pre = "gpt2";
        for (int b = 0; b < 256; ++b) d.tokens.push_back(text::byte_to_unicode(uint8_t(b)));
        d.tokens.push_back("<|endoftext|>");
        d.tokens.push_back("ab");  // a BPE vocabulary needs a merge
        d.merges.push_back("a b");
        d.token_types.assign(258, int64_t(tokenizer::TokenType::kNormal));
        d.token_types[256] = int64_t(tokenizer::TokenType::kControl);
        d.eos_id = 256;
        return std::move(tokenizer::Tokenizer::from_vocab(d).value());
    }();
    return *tok;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const size_t step = 1 + data[0] % 64;
    const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
    http::HttpLimits limits;
    limits.max_body_bytes = 1 << 20;
    http::RequestParser parser(limits);
    std::string buffer;
    for (size_t at = 0; at < input.size() || !buffer.empty();) {
        if (at < input.size()) {
            buffer.append(input, at, step);
            at += step;
        }
        const auto state = parser.feed(buffer);
        if (state == http::RequestParser::State::kError) break;
        if (state != http::RequestParser::State::kComplete) {
            if (at >= input.size()) break;
            continue;
        }
        http::HttpRequest request = parser.take();
        check_keys(request);
        nlohmann::json body;
        // The server's bounds: 256 documents, plus the question part.
        if (server::parse_json_body(request, body, server::JsonBounds{257})) continue;
        server::GenerationRequest gen;
        if (request.path == "/completion" || request.path == "/completions") {  // llama-server's native API
            server::NativeRequest native;
            if (!server::parse_native_request(body, byte_tokenizer(), 4, native)) gen = native.request_for(0);
        } else if (request.path.starts_with("/v1/messages")) {  // Anthropic Messages and count_tokens
            const bool count = request.path.find("count_tokens") != std::string::npos;
            (void)server::parse_anthropic_request(
                body, count ? server::AnthropicRoute::kCountTokens : server::AnthropicRoute::kMessages, gen);
        } else if (request.path.ends_with("/responses")) {  // OpenAI Responses
            server::ResponsesRequest responses;
            (void)server::parse_responses_request(body, responses);
            gen = std::move(responses.gen);
        } else {
            (void)server::parse_generation_request(body, request.path.find("chat") != std::string::npos, gen);
        }
        if (gen.document_delimiter) {  // a client's pattern over its own messages, budgeted
            server::MatchBudget budget;
            budget.steps_left = 1 << 20;  // each input stays fast; the budget's exhaustion is exercised
            for (const auto& m : gen.messages) (void)gen.document_delimiter->find_all(m.content, budget);
        }
        std::vector<server::DocumentRef> docs;
        if (body.is_object() && body.contains("documents"))
            (void)server::parse_documents(body["documents"], false, docs);
    }
    return 0;
}

// The keys a request presents (Bearer or X-Api-Key), matched as the server matches them, and an
// --api-key value split as the command line splits it.
void check_keys(const http::HttpRequest& request) {
    static const server::ApiKeys keys({"fuzz-key-1", "fuzz-key-2"});
    (void)keys.match(request);
    (void)server::ApiKeys::parse_key_list(request.header("x-api-key"));
}
