// PatchShares: the choices of one request (RagRequest::choice_group, OpenAI's `n`) are the same
// prompt, so their recomputed document rows (DocumentReuse::recompute) are the same rows of the
// same KV. The first choice admitted computes them (measurement, selection and rows); a choice
// admitted while it holds them takes references to its patch blocks and waits, then copies the
// chosen rows in and runs its tail. n choices cost one recompute, not n.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "engine/sequence/sequence_state.h"
#include "kv/kv_cache.h"

namespace lazyattn::engine {

class PatchShares {
public:
    // `kv`: the pool whose blocks a follower takes references on.
    explicit PatchShares(kv::KvCache& kv) : kv_(kv) {}

    // The admitted sibling whose patches s can read, or null (s then computes its own).
    SequenceState* leader_for(const SequenceState& s) const;
    // s computes its group's recomputed rows (it has some, or a measurement to choose them).
    void lead(SequenceState& s);
    // s reads the leader's patch blocks (references taken, recorded in s.kv.held), and its rows
    // once they are ready.
    void follow(SequenceState& s, SequenceState& leader);
    // s's recomputed rows are all computed (measured, chosen and run): the choices following it
    // take them and may run. Cheap when s leads nothing.
    void share_ready(SequenceState& s);
    // s releases its KV: a leader hands its unfinished phases (and the blocks its followers
    // hold) to the first waiting follower, which computes the rest; a follower leaves the list.
    void leave(SequenceState& s);

private:
    // The leader is the first choice admitted; a choice admitted while it holds its patch
    // blocks follows it (references to the same blocks, nothing computed).
    struct Share {
        SequenceState* leader = nullptr;
        std::vector<SequenceState*> waiting;  // followers whose rows are not copied in yet
    };

    kv::KvCache& kv_;
    std::map<uint64_t, Share> shares_;  // by RagRequest::choice_group
};

}  // namespace lazyattn::engine
