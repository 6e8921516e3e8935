#include "engine_state.h"

#include <cstring>

#include "backend/device.h"
#include "engine/request/cache_mode.h"
#include "kernels/params/kv_dtype.h"
#include "server/serving_stack.h"

namespace lazyattn::python {
namespace {

// max_tokens not given: this many, or the rest of the context when that is less.
constexpr int32_t kDefaultMaxTokens = 256;

Expected<engine::EngineConfig> engine_config(const Options& o) {
    engine::EngineConfig ec;
    auto mode = engine::parse_cache_mode(o.cache_mode);
    if (!mode.ok()) return invalid_argument("cache_mode: " + mode.status().message());
    ec.cache_mode = *mode;
    auto dtype = kernels::parse_kv_dtype(o.kv_dtype);
    if (!dtype) return invalid_argument("kv_dtype: unknown KV type '" + o.kv_dtype + "' (f32, f16, bf16, q8_0, q4_0)");
    ec.kv_types = kernels::same_kv_types(*dtype);
    auto device = backend::parse_device(o.device);
    if (!device.ok()) return invalid_argument("device: " + device.status().message());
    ec.device = *device;
    ec.kv_stores = o.kv_store;
    ec.kv_cache_mb = o.kv_cache_mb;
    ec.max_num_seqs = o.max_num_seqs;
    ec.max_model_len = o.max_model_len;
    ec.max_batch_tokens = o.max_batch_tokens;
    LA_RETURN_IF_ERROR(ec.validate());
    return ec;
}

}  // namespace

void keep_in_forked_child(std::shared_ptr<State> state) {
    static auto* kept = new std::vector<std::shared_ptr<State>>();  // never freed, by design
    kept->push_back(std::move(state));
}

std::shared_ptr<State> open_engine(const Options& o) {
    auto state = std::make_shared<State>();
    state->options = o;
    auto ec = engine_config(o);
    if (!ec.ok()) raise_value("", ec.status().message());
    state->config = *ec;
    server::ServingStackOptions so;
    so.model_path = o.model;
    so.device = ec->device;
    so.num_threads = o.threads;
    so.engine = *ec;
    so.chat_template = o.chat_template;
    so.document_reuse = o.document_reuse;
    so.quality = o.quality;
    auto open = [&so] {
        nb::gil_scoped_release unlocked;
        return server::open_serving_stack(so);
    };
    Expected<server::ServingStack> opened = open();
    if (!opened.ok()) {
        // A setting the caller gave is theirs (ValueError naming it); anything else the engine's.
        const std::string& m = opened.status().message();
        for (const char* param : {"document_reuse", "quality", "chat_template"}) {
            if (m.rfind(std::string(param) + ": ", 0) == 0) raise_value(param, m.substr(std::strlen(param) + 2));
        }
        throw EngineError("cannot start the engine on " + o.model + ": " + m);
    }
    state->lm = std::move(opened->lm);
    state->chat = std::move(opened->chat);
    state->default_reuse = opened->default_reuse;
    state->quality = opened->quality;
    state->engine = std::move(opened->engine);
    // The server's front with the in-process defaults: no cap below the context and no response
    // size to bound; a max_tokens past the context is refused instead of clamped.
    server::FrontSettings settings;
    settings.default_max_tokens = kDefaultMaxTokens;
    settings.clamp_max_tokens = false;
    settings.bound_response_bytes = false;
    settings.document_reuse = state->default_reuse;
    state->front = std::make_unique<server::ServingFront>(*state->engine, *state->lm.tokenizer, state->chat, settings);
    return state;
}

}  // namespace lazyattn::python
