// InputBuilder: lays a step out as the model's input (vLLM v1's GPUModelRunner._prepare_inputs):
// from the Scheduler's chunks to ForwardBatch rows, slots, spans, overrides and the measured
// sequences. Every layout rule of the engine lives here, once: where a request's segments are
// read (shared blocks, recomputed rows as a leading span or as overrides), where a row's K/V is
// written (the slot rule), how a probe's measured rows and a KV-deviation row are placed.
//
// Batch order: segment jobs, then recomputed document rows and probes, then tails (decode rows
// first); logits come back in the order of the tail chunks. KV-deviation rows go to a second
// batch (`measure`) that reads cached KV and writes nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/scheduler_output.h"
#include "model/forward_batch.h"

namespace lazyattn::engine {

// Selection by the question measures attention from the prompt tail's last rows only (the
// question ends the tail; the mass costs rows x keys per probed layer on the host).
constexpr int32_t kProbeMeasuredRows = 256;

struct LayoutRules {
    int32_t block_size = 16;
    bool keys_rotated = true;          // keys_stored_rotated(cache mode): false for lazy-k
    std::vector<int32_t> mass_layers;  // EngineConfig::query_mass_layers (probes)
};

// Where each chunk's rows and measurements are in the step's input.
struct ChunkLayout {
    int64_t mass_offset = -1;  // kProbe: where its key mass starts in the forward's, -1: none
    int64_t mass_count = 0;
    int32_t measure_row = -1;  // kDeviation: its first row of `measure`
};

struct StepInputs {
    model::ForwardBatch batch;        // the rows, spans and block-attn copies
    model::ForwardBatch measure;      // KV-deviation rows (Model::measure_kv_deviation), after batch
    std::vector<ChunkLayout> chunks;  // one per SchedulerOutput::chunks
};

StepInputs build_step_inputs(const SchedulerOutput& step, const LayoutRules& rules);

// Hands each probe and deviation chunk its share of what the step measured (the forward's key
// mass, measure's deviations) as ChunkResult::measured; `results` has one entry per chunk.
void split_measurements(const StepInputs& inputs, const SchedulerOutput& step, const std::vector<float>& key_mass,
                        const std::vector<float>& kv_deviation, std::vector<ChunkResult>& results);

}  // namespace lazyattn::engine
