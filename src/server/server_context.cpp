#include "server/server_context.h"

#include <chrono>

#include "tokenizer/chat_template_kwargs.h"

namespace lazyattn::server {

namespace {

FrontSettings front_settings(const ServerConfig& c) {
    FrontSettings s;
    s.model_id = c.model_id;
    s.aliases = c.model_aliases;
    s.strict_model_name = c.strict_model_name;
    s.request_context = c.request_context;
    s.max_tokens_cap = c.max_tokens_cap;
    s.default_max_tokens = c.default_max_tokens;
    s.document_reuse = c.document_reuse;
    s.documents_from = c.documents_from;
    s.max_documents = c.max_documents;
    s.known_documents = c.known_documents;
    return s;
}

// The server's template variables become the template's defaults.
std::optional<tokenizer::ChatTemplate> with_server_kwargs(std::optional<tokenizer::ChatTemplate> chat,
                                                          const ServerConfig& c) {
    if (chat) chat->default_kwargs = tokenizer::merge_template_kwargs(chat->default_kwargs, c.chat_template_kwargs);
    return chat;
}

}  // namespace

ServerContext::ServerContext(const ServerConfig& cfg, engine::ServingEngine& eng, const tokenizer::Tokenizer& tok,
                             std::optional<tokenizer::ChatTemplate> chat)
    : config(cfg),
      api_keys(cfg.api_keys),
      engine(eng),
      tokenizer(tok),
      front(eng, tok, with_server_kwargs(std::move(chat), cfg), front_settings(cfg)),
      builder(front.builder()),
      context_length(front.context_length()),
      started_unix_s(
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
              .count()),
      metrics(cfg.model_id) {}

bool ServerContext::wait_idle(double timeout_s) {
    std::unique_lock<std::mutex> lock(active_mu);
    return active_cv.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return active == 0; });
}

ActiveRequest::ActiveRequest(ServerContext& ctx) : ctx_(ctx) {
    std::lock_guard<std::mutex> lock(ctx_.active_mu);
    ++ctx_.active;
}

ActiveRequest::~ActiveRequest() {
    std::lock_guard<std::mutex> lock(ctx_.active_mu);
    if (--ctx_.active == 0) ctx_.active_cv.notify_all();
}

}  // namespace lazyattn::server
