// InputBuilder: lays a step out as the model's input (vLLM v1's GPUModelRunner._prepare_inputs):
// from the Scheduler's chunks to ForwardBatch rows, slots, spans, overrides and the measured
// sequences. The layout rules every chunk shares live here, once: where a segment job's rows go,
// where a request's segments are read (shared blocks, recomputed rows as a leading span or as
// overrides), the tail's sequence and its logits; what is a phase kind's own (its patch, probe
// or KV-deviation rows) is its layout hook in the phase table (reuse/phase_kinds.h), called with
// these rules.
//
// Batch order: segment jobs, then every phase but the tail in chunk order, then tails (decode
// rows first); logits come back in the order of the tail chunks. A kind whose rows run apart
// (KV deviation) lays them in a batch of its own, which reads cached KV and writes nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/reuse/phase_kinds.h"
#include "engine/scheduler_output.h"
#include "model/forward_batch.h"

namespace lazyattn::engine {

struct LayoutRules {
    int32_t block_size = 16;
    bool keys_rotated = true;          // keys_stored_rotated(cache mode): false for lazy-k
    std::vector<int32_t> mass_layers;  // EngineConfig::query_mass_layers (probes)
};

struct StepInputs {
    model::ForwardBatch batch;               // the rows, spans and block-attn copies
    std::vector<model::ForwardBatch> apart;  // per phase kind: its rows run apart (PhaseKindRow::measure)
    std::vector<ChunkLayout> chunks;         // one per SchedulerOutput::chunks
};

StepInputs build_step_inputs(const SchedulerOutput& step, const LayoutRules& rules);

// Hands each measuring chunk its share of what the step measured (the forward's key mass, or what
// its kind's rows run apart returned: apart[kind], empty when none ran) as ChunkResult::measured;
// `results` has one entry per chunk.
void split_measurements(const StepInputs& inputs, const SchedulerOutput& step, const std::vector<float>& key_mass,
                        const std::vector<std::vector<float>>& apart, std::vector<ChunkResult>& results);

}  // namespace lazyattn::engine
