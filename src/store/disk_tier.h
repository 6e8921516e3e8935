// DiskTier (--kv-store DIR): one file per entry, DIR/<first 2 hex digits of the key>/<key>.seg.
// Written to a temporary file in the same directory and renamed into place, so a reader (or a
// process killed mid-write) never sees a partial entry; read by mmap. A failed write (disk full,
// file size limit, I/O error) removes its temporary file and returns kIoError.
//
// Size cap (TierOptions::max_bytes): the tier keeps an index of its entries (size, last use:
// the file's time, or a hit in this process), built by a scan at open. A write that takes the
// total past the cap scans the directory again (other replicas may share it), then deletes the
// least recently used entries down to 90% of the cap. A reader still holding a deleted entry's
// mapping keeps reading it (unlinked files live on while mapped).
#pragma once

#include <map>
#include <mutex>

#include "store/store_tier.h"

namespace lazyattn::store {

class DiskTier : public StoreTier {
public:
    // Creates the directory when missing; kIoError when it cannot be created or written.
    static Expected<std::unique_ptr<DiskTier>> open(const std::string& dir, const TierOptions& options = {});
    std::string name() const override { return "disk"; }
    std::string where() const override { return dir_; }
    Expected<Blob> get(const std::string& key) override;
    Expected<bool> contains(const std::string& key) override;
    Expected<bool> put(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) override;
    TierUsage usage() const override;
    std::string path_of(const std::string& key) const;

private:
    struct Entry {
        int64_t bytes = 0;
        double last_use = 0;  // seconds since the epoch
    };
    DiskTier(std::string dir, const TierOptions& options) : dir_(std::move(dir)), options_(options) {}
    void rescan_locked();      // mu_ held: the index from the directory's files
    void evict_locked();       // mu_ held: down to 90% of the cap, least recently used first
    double next_use_locked();  // mu_ held: the time of a use now, later than any use before

    std::string dir_;
    TierOptions options_;
    mutable std::mutex mu_;
    std::map<std::string, Entry> index_;  // key -> entry, under mu_
    int64_t bytes_ = 0;                   // sum over index_
    int64_t evictions_ = 0;
    double latest_use_ = 0;  // the newest last_use handed out or scanned
};

}  // namespace lazyattn::store
