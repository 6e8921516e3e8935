#include "server/unserved_routes.h"

#include "server/api_error.h"
#include "server/http_util.h"

namespace lazyattn::server {
namespace {

constexpr const char* kEmbeddings = "embeddings (this server generates text; run an embedding model beside it)";
constexpr const char* kRerank = "reranking (this server generates text; run a reranker beside it)";

const UnservedRoute kRoutes[] = {
    {"POST", "/props", "llama-server's /props", "server settings are command-line options"},
    {"POST", "/slots/{id}", "slot save, restore and erase",
     "documents persist in --kv-store; pin them with POST /v1/documents"},
    {"POST", "/v1/embeddings", "embeddings", kEmbeddings},
    {"POST", "/embeddings", "embeddings", kEmbeddings},
    {"POST", "/embedding", "embeddings", kEmbeddings},
    {"POST", "/v1/rerank", "reranking", kRerank},
    {"POST", "/v1/reranking", "reranking", kRerank},
    {"POST", "/rerank", "reranking", kRerank},
    {"POST", "/reranking", "reranking", kRerank},
    {"POST", "/infill", "code infill (fill-in-the-middle)", "POST /v1/completions with the prefix as the prompt"},
    {"GET", "/lora-adapters", "LoRA adapters", "merge the adapter into the GGUF"},
    {"POST", "/lora-adapters", "LoRA adapters", "merge the adapter into the GGUF"},
    {"POST", "/v1/audio/transcriptions", "audio transcription", "not planned: a text-only engine"},
    {"POST", "/audio/transcriptions", "audio transcription", "not planned: a text-only engine"},
    {"POST", "/models", "router mode (several models)", "one model per process: run one lazyattn serve per model"},
    {"POST", "/models/load", "router mode (several models)", "one model per process: run one lazyattn serve per model"},
    {"POST", "/models/unload", "router mode (several models)",
     "one model per process: run one lazyattn serve per model"},
    {"GET", "/tools", "built-in tools and MCP", "not served"},
    {"POST", "/tools", "built-in tools and MCP", "not served"},
    {"GET", "/cors-proxy", "the CORS proxy", "not served"},
    {"POST", "/cors-proxy", "the CORS proxy", "not served"},
    {"GET", "/", "the web UI", "call the HTTP API (docs/api.md)"},
    {"POST", "/chat/completions/input_tokens", "chat token counting", "POST /tokenize with messages"},
    {"POST", "/v1/chat/completions/input_tokens", "chat token counting", "POST /tokenize with messages"},
    {"GET", "/v1/stream", "resumable streams (X-Conversation-Id)", "not served: a dropped stream is asked again"},
    {"DELETE", "/v1/stream", "resumable streams (X-Conversation-Id)", "not served: a dropped stream is asked again"},
    {"POST", "/predict", "Vertex AI prediction (AIP_MODE)", "POST /v1/chat/completions"},
};

}  // namespace

std::span<const UnservedRoute> unserved_routes() { return kRoutes; }

void add_unserved_routes(http::Router& router) {
    for (const UnservedRoute& u : kRoutes) {
        router.add(u.method, u.path, http::Lane::kLight,
                   [&u](const http::HttpRequest&, http::HttpResponse& res, const http::ClientLink&) {
                       send_error(res,
                                  ApiError{501, std::string(u.feature) + " is not served by lazyattn: " + u.instead,
                                           "not_supported_error", "", "not_implemented"});
                   });
    }
}

}  // namespace lazyattn::server
