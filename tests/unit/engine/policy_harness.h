// The Scheduler without a model or a tokenizer: a real Scheduler over a small host pool, stepped
// with a fake runner that checks each plan against the pool and answers with scripted tokens,
// and a text-free output side (end of generation is token kEos; "length" is the sequence's own
// rule). Scheduler policy (admission, preemption, fairness, pins, quotas, cancellation) is
// tested here in milliseconds; the engine tests check the same policy with a model's forward,
// and test_output_processor.cpp what tokens mean as text (stop strings, held-back text).
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/kv_memory.h"
#include "engine/request/cache_mode.h"
#include "engine/runner/input_builder.h"
#include "engine/scheduler/scheduler.h"
#include "engine/scheduler_output.h"
#include "engine/sequence/sequence_state.h"

namespace lazyattn::engine::testing_support {

// Token ids 0..255 and the end of generation.
constexpr int32_t kEos = 256;
constexpr int32_t kVocab = 257;

// What the fake runner answers for a sampling row: by default the letters a..z in turn (a
// request's n-th token is 'a' + n % 26, whatever the batch around it).
using TokenScript = std::function<int32_t(const SequenceState&)>;
inline int32_t alphabet(const SequenceState& s) { return 'a' + s.num_generated % 26; }

struct StepRecord {
    int32_t rows = 0, decode_rows = 0;
    std::set<uint64_t> tails;  // requests with a tail chunk in the step
    int32_t probe_rows = 0;    // rows of probes (selection by the question)
    std::vector<kernels::AttentionSpan> spans;
    std::vector<kernels::KeyOverride> overrides;
};

// What the fake runner answers for a probe: the attention mass of token t of a span. By default
// later tokens weigh more (a selection by it takes each document's last tokens).
using MassScript = std::function<float(int32_t t)>;
inline float later_weighs_more(int32_t t) { return float(t + 1); }

class PolicyHarness {
public:
    // measures_attention: whether the fake backend measures attention (selection by the question).
    explicit PolicyHarness(EngineConfig config, int32_t context_length = 4096, bool measures_attention = false)
        : memory_(shape(config)), scheduler_(facts(context_length, measures_attention), memory_, prepared(config)) {}

    Scheduler& scheduler() { return scheduler_; }

    Expected<std::shared_ptr<RequestHandle>> add(RagRequest r) {
        LA_RETURN_IF_ERROR(scheduler_.check_request(r));
        auto h = std::make_shared<RequestHandle>(next_id_++);
        LA_RETURN_IF_ERROR(scheduler_.enqueue(std::move(r), h));
        return h;
    }

    // add() that must succeed (the test fails with the reason otherwise).
    std::shared_ptr<RequestHandle> submit(RagRequest r) {
        auto h = add(std::move(r));
        if (!h.ok()) {
            ADD_FAILURE() << "refused: " << h.status().to_string();
            return std::make_shared<RequestHandle>(0);
        }
        return *h;
    }

    // One schedule -> fake run -> update, as EngineCore::step does it with the runner's own
    // layout (runner/input_builder.h); false when nothing moved.
    bool step() {
        const SchedulerOutput out = scheduler_.schedule();
        if (out.empty()) return out.progressed;
        const kv::KvShape& sh = memory_.shape();
        const EngineConfig& config = scheduler_.config();
        const StepInputs in =
            build_step_inputs(out, {sh.block_size, keys_stored_rotated(config.cache_mode), config.query_mass_layers});
        const Status valid = in.batch.validate(sh.num_blocks, sh.block_size, kVocab);
        EXPECT_TRUE(valid.ok()) << valid.to_string();
        StepRecord rec{in.batch.num_rows(), out.num_decode_rows, {}, 0, in.batch.spans, in.batch.overrides};
        std::vector<float> key_mass;
        for (const int32_t q : in.batch.mass_seqs) {  // Model::forward's layout: spans in order
            const kernels::AttentionSeq& seq = in.batch.seqs[size_t(q)];
            rec.probe_rows += seq.num_queries;
            for (int32_t si = seq.span_begin; si < seq.span_end; ++si) {
                for (int32_t t = 0; t < in.batch.spans[size_t(si)].num_tokens; ++t) key_mass.push_back(mass(t));
            }
        }
        ModelRunnerOutput ran;
        ran.chunks.resize(out.chunks.size());
        split_measurements(in, out, key_mass, {}, ran.chunks);
        size_t rows = 0;
        for (const PhaseChunk& t : out.chunks) {
            if (t.kind == PhaseKind::kTail) rows += size_t(t.all_logits ? t.rows() : 1);
        }
        logits_.assign(rows * kVocab, 0.0f);
        size_t row = 0;
        for (size_t i = 0; i < out.chunks.size(); ++i) {
            const PhaseChunk& t = out.chunks[i];
            if (t.kind != PhaseKind::kTail) continue;
            rec.tails.insert(t.seq->id);
            ChunkResult& r = ran.chunks[i];
            r.num_logit_rows = t.all_logits ? t.rows() : 1;
            r.logits = logits_.data() + row * kVocab;
            row += size_t(r.num_logit_rows);
            if (t.sample) r.token = script(*t.seq);
        }
        steps.push_back(rec);
        // EngineCore's apply_step with the text-free output side.
        for (const StepToken& t : scheduler_.update(out, ran)) {
            // (a negative token: no position left to sample at)
            FinishReason reason = FinishReason::kLength;
            if (t.token >= 0) {
                t.seq->handle->push_token(t.token, "", t.logprobs);
                const bool eos = t.token == kEos && !t.seq->request.ignore_eos;
                reason = eos                                                   ? FinishReason::kStop
                         : t.seq->at_length_limit(scheduler_.context_length()) ? FinishReason::kLength
                                                                               : FinishReason::kNone;
            }
            if (reason != FinishReason::kNone) scheduler_.finish_request(*t.seq, reason);
        }
        scheduler_.end_step();
        return true;
    }
    void run_all(int max_steps = 100000) {
        for (int i = 0; i < max_steps && step();) ++i;
    }
    // Every reference returned, the index and pins consistent.
    void expect_pool_whole() {
        scheduler_.check_integrity();
        EXPECT_EQ(scheduler_.kv().kv_cache().num_free(), scheduler_.kv().kv_cache().pool().num_blocks());
    }

    TokenScript script = alphabet;
    MassScript mass = later_weighs_more;
    std::vector<StepRecord> steps;

private:
    static kv::KvShape shape(const EngineConfig& c) {
        kv::KvShape s;
        s.num_layers = 1;
        s.num_kv_heads = 1;
        s.head_dim = 4;
        s.block_size = c.block_size;
        s.num_blocks = c.kv_num_blocks;
        return s;
    }
    static ModelFacts facts(int32_t context_length, bool measures_attention) {
        ModelFacts f;
        f.vocab_size = kVocab;
        f.context_length = context_length;
        f.description = "fake model";
        // The fake forward answers key mass for every measured sequence and runs nothing apart:
        // it serves each measurement laid out in the forward (the probe's), none run apart.
        for (int32_t k = 0; k < num_phase_kinds() && measures_attention; ++k) {
            const PhaseKind kind{uint8_t(k)};
            if (phase_kind(kind).measures() && !phase_kind(kind).apart) f.allow(kind);
        }
        return f;
    }
    static const EngineConfig& prepared(EngineConfig& c) {
        c.check_integrity = true;
        c.cache_hash_key = 7;
        return c;
    }

    backend::HostKvMemory memory_;
    Scheduler scheduler_;
    std::vector<float> logits_;
    uint64_t next_id_ = 1;
};

inline std::vector<int32_t> letters(int n, int seed) {
    std::vector<int32_t> t(n);
    for (int i = 0; i < n; ++i) t[i] = 'A' + (seed * 7 + i * 3) % 26;
    return t;
}

inline RagRequest request(std::vector<std::vector<int32_t>> docs, int tail_tokens, int max_tokens,
                          const std::string& tenant = "", int seed = 1) {
    RagRequest r;
    r.tenant = tenant;
    r.segments = std::move(docs);
    r.tail = letters(tail_tokens, seed + 100);
    r.max_tokens = max_tokens;
    r.ignore_eos = false;
    return r;
}

}  // namespace lazyattn::engine::testing_support
