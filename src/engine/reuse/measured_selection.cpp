#include "engine/reuse/measured_selection.h"

#include "core/check.h"

namespace lazyattn::engine {

int32_t choose_measured_rows(SequenceState& s, int32_t block_size) {
    RequestKv& ar = s.kv;
    std::vector<size_t> docs;
    std::vector<std::vector<float>> score;
    std::vector<int32_t> budget;
    for (size_t d = 0; d < ar.segments.size(); ++d) {
        if (ar.segments[d].selection_score.empty()) continue;
        docs.push_back(d);
        score.push_back(std::move(ar.segments[d].selection_score));
        budget.push_back(s.request.recompute_budget(d, block_size));
    }
    const auto rows = select_by_mass(s.request.reuse.recompute_select, score, budget);
    int32_t chosen = 0;
    for (size_t i = 0; i < docs.size(); ++i) {
        SegmentPlacement& place = ar.segments[docs[i]];
        place.selection_score.clear();
        place.patch_rows = rows[i];
        place.patch_tokens = int32_t(rows[i].size());
        LA_CHECK(int64_t(place.patch_blocks.size()) * block_size >= place.patch_tokens);
        chosen += place.patch_tokens;
    }
    ar.find_phase(PhaseKind::kPatch)->total += chosen;
    return chosen;
}

}  // namespace lazyattn::engine
