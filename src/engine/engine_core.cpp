#include "engine/engine_core.h"

#include "core/timer.h"
#include "engine/reuse/phase_kinds.h"
#include "store/model_fingerprint.h"

namespace lazyattn::engine {

ModelFacts model_facts(const model::Model& model) {
    ModelFacts facts;
    facts.vocab_size = model.config().vocab_size;
    facts.context_length = model.config().context_length;
    facts.description = model.config().describe();
    facts.measurements = supported_measurements(model);
    return facts;
}

void apply_step(Scheduler& scheduler, OutputProcessor& outputs, const SchedulerOutput& out, ModelRunnerOutput& ran) {
    finish_tokens(scheduler, outputs, scheduler.update(out, ran));
}

void finish_tokens(Scheduler& scheduler, OutputProcessor& outputs, const std::vector<StepToken>& tokens) {
    for (const StepToken& t : tokens) {
        // What the token means for its request is the OutputProcessor's to say.
        const FinishReason reason = t.token < 0 ? FinishReason::kLength : outputs.on_token(*t.seq, t.token, t.logprobs);
        if (reason == FinishReason::kNone) continue;
        outputs.flush(*t.seq);
        scheduler.finish_request(*t.seq, reason);
    }
    scheduler.end_step();
}

EngineCore::EngineCore(model::Model& model, const tokenizer::Tokenizer& tokenizer, const EngineConfig& config)
    : runner_(model, config),
      store_(config, runner_.kv_memory()),
      scheduler_(model_facts(model), runner_.kv_memory(), config, &store_),
      outputs_(tokenizer, scheduler_.context_length()) {
    if (!runner_.status().ok()) return;  // a pool that could not be had refuses everything: no tier opened
    // The entries are keyed by the weights' fingerprint (a store never serves another model's
    // KV); it reads every weight, so it is made only for a store that is used.
    const bool used = !config.kv_stores.empty() && segments_are_blocks(config.cache_mode);
    const double t0 = now_ms();
    const store::Fingerprint fingerprint = used ? store::model_fingerprint(model) : store::Fingerprint{};
    store_status_ = store_.open(fingerprint, now_ms() - t0, scheduler_.context_length());
}

Status EngineCore::check_request(const RagRequest& request) const {
    // The only way to an empty KV pool: the runner could not allocate the one asked for, and its
    // status says why. Checked here once (the Scheduler's check_fits would refuse every request
    // against an empty pool too, without the reason).
    LA_RETURN_IF_ERROR(runner_.status());
    LA_RETURN_IF_ERROR(store_status_);
    return scheduler_.check_request(request);
}

Expected<std::shared_ptr<RequestHandle>> EngineCore::add(RagRequest request, RequestHandle::Callback callback,
                                                         bool want_all_tail_logits) {
    scheduler_.fit_default_max_tokens(request);
    LA_RETURN_IF_ERROR(check_request(request));
    auto handle = std::make_shared<RequestHandle>(next_id_++, std::move(callback));
    LA_RETURN_IF_ERROR(enqueue(std::move(request), handle, want_all_tail_logits));
    return handle;
}

Status EngineCore::enqueue(RagRequest request, std::shared_ptr<RequestHandle> handle, bool want_all_tail_logits) {
    const bool report_progress = request.report_progress;
    const uint64_t id = handle->id();
    LA_RETURN_IF_ERROR(scheduler_.enqueue(std::move(request), std::move(handle), want_all_tail_logits));
    if (report_progress) progress_.watch(id);
    return {};
}

bool EngineCore::step() {
    const SchedulerOutput out = scheduler_.schedule();
    // Requests just admitted say so (what the cache served) before any of their rows run.
    if (progress_.num_watched() > 0) progress_.report(scheduler_);
    if (out.empty()) return out.progressed;
    ModelRunnerOutput ran = runner_.run(out);
    // The step's progress goes out before its tokens: a prompt done in this step is reported
    // whole before its first token.
    const std::vector<StepToken> tokens = scheduler_.update(out, ran);
    if (progress_.num_watched() > 0) progress_.report(scheduler_);
    finish_tokens(scheduler_, outputs_, tokens);
    return true;
}

}  // namespace lazyattn::engine
