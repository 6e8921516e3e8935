// SegmentJobs: the running document jobs and their references (segment_jobs.h).
#include "engine/documents/segment_jobs.h"

#include "core/check.h"

namespace lazyattn::engine {

int64_t SegmentJobs::find(const kv::BlockHash& seed, const std::vector<int32_t>& tokens) const {
    for (const auto& [id, job] : jobs_) {
        if (job.shared && job.seed == seed && job.tokens == tokens) return id;
    }
    return -1;
}

int64_t SegmentJobs::add(SegmentJob job) {
    for (kv::BlockId b : job.blocks) kv_.ref(b);  // the job's own reference on each
    const int64_t id = next_id_++;
    jobs_.emplace(id, std::move(job));
    ++num_started_;
    return id;
}

void SegmentJobs::join(int64_t id, bool background_user) {
    if (id < 0) return;
    ++jobs_.at(id).num_users;
    if (background_user) return;
    for (int64_t j = id; j >= 0;) {
        auto it = jobs_.find(j);
        if (it == jobs_.end()) break;
        it->second.background = false;
        j = it->second.anchor_job;
    }
}

void SegmentJobs::leave(int64_t id) {
    auto it = jobs_.find(id);
    if (it == jobs_.end() || --it->second.num_users > 0) return;
    // Nobody needs the unfinished segment any more: drop the job and its blocks.
    if (const int64_t anchor_job = erase(it); anchor_job >= 0) leave(anchor_job);
}

void SegmentJobs::finish(int64_t id) {
    auto it = jobs_.find(id);
    LA_CHECK(it != jobs_.end());
    // The anchor's job finished first, so is normally gone already.
    if (const int64_t anchor_job = erase(it); anchor_job >= 0) leave(anchor_job);
}

int64_t SegmentJobs::erase(std::map<int64_t, SegmentJob>::iterator it) {
    const int64_t anchor_job = it->second.anchor_job;
    kv_.release(it->second.blocks);
    kv_.release(it->second.anchor_blocks);
    jobs_.erase(it);
    return anchor_job;
}

}  // namespace lazyattn::engine
