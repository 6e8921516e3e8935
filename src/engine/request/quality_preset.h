// Quality presets (`--quality fast|balanced|accurate` on serve and the benchmarks, the Python
// LLM's `quality=`): one name for how requests that do not say read their documents and whether
// the engine makes conditioned copies in the background. A request's own `document_reuse` still
// wins. The figures each preset's help quotes are docs/benchmarks.md §4's (SmolLM2-135M: the 500
// questions and the held-out families, issue 63's evidence run).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/request/document_reuse.h"

namespace lazyattn::engine {

enum class QualityPreset {
    kFast,      // plain lazy: each document's plain copy, nothing more
    kBalanced,  // conditioned copies where they exist (neighbours=1@ready), made in the background,
                // and every non-first document's sinks damped (damp=16:-2)
    kAccurate,  // the copies of balanced, each document's first 10% recomputed (the frontier's knee)
                // in place of the damping (recomputed first tokens are no sinks)
};

// A document seen in this many requests of a tenant gets its conditioned copy under balanced and
// accurate (EngineConfig::condition_after), unless --condition-after says otherwise. Two, not
// one: on a recurring stream the documents that come back are the ones worth a second encoding,
// while one sighting conditions every document ever read, most of them once (a Zipf stream's
// tail), each at up to twice its encoding cost; more than two leaves the head's copies later.
inline constexpr int32_t kDefaultConditionAfter = 2;

// The preset of a server, benchmark or Python LLM that names none (and whose model names no
// layout of its own, engine/loading/block_finetune.h): balanced. Chosen by issue 63's rule on
// the evidence of docs/benchmarks.md §4: it beats fast with p < 0.05 pooled over the 500 and the
// held-out families and is significantly worse on no family, at a TTFT that stays near fast's
// (the damped sinks cost nothing; the copies are made in capacity requests leave unused).
inline constexpr QualityPreset kDefaultQualityPreset = QualityPreset::kBalanced;

std::optional<QualityPreset> parse_quality_preset(std::string_view name);
std::string_view quality_preset_name(QualityPreset p);
// The document reuse requests that do not say get.
DocumentReuse preset_document_reuse(QualityPreset p);
// EngineConfig::condition_after for the preset: 0 for fast (no background work).
int32_t preset_condition_after(QualityPreset p);
// One line per preset: its setting, accuracy and TTFT as measured (for --help and docs/api.md).
std::string quality_preset_help();

}  // namespace lazyattn::engine
