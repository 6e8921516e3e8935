#include "server/server_context.h"

#include <chrono>

namespace lazyattn::server {

ServerContext::ServerContext(const ServerConfig& cfg, engine::ServingEngine& eng, const tokenizer::Tokenizer& tok,
                             std::optional<tokenizer::ChatTemplate> chat, int32_t ctx_len)
    : config(cfg),
      api_keys(cfg.api_keys),
      engine(eng),
      tokenizer(tok),
      builder(
          tok, std::move(chat), ctx_len, cfg.max_tokens_cap,
          [&eng](const std::string& tenant, const std::string& id) { return eng.document_tokens(tenant, id); },
          cfg.document_reuse, cfg.documents_from, cfg.max_documents,
          std::make_shared<KnownDocuments>(cfg.known_documents)),
      context_length(ctx_len),
      started_unix_s(
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
              .count()),
      metrics(cfg.model_id) {}

bool ServerContext::is_model(const std::string& name) const {
    const std::string& id = config.model_id;
    const std::string ext = ".gguf";
    const bool has_ext = id.size() > ext.size() && id.compare(id.size() - ext.size(), ext.size(), ext) == 0;
    return name == id || (has_ext && name == id.substr(0, id.size() - ext.size()));
}

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
