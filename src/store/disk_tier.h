// DiskTier (--kv-store DIR): one file per entry, DIR/<first 2 hex digits of the key>/<key>.seg.
// Written to a temporary file in the same directory and renamed into place, so a reader (or a
// process killed mid-write) never sees a partial entry; read by mmap. A failed write (disk full,
// file size limit, I/O error) removes its temporary file and returns kIoError.
#pragma once

#include "store/store_tier.h"

namespace lazyattn::store {

class DiskTier : public StoreTier {
public:
    // Creates the directory when missing; kIoError when it cannot be created or written.
    static Expected<std::unique_ptr<DiskTier>> open(const std::string& dir);
    std::string name() const override { return "disk"; }
    std::string where() const override { return dir_; }
    Expected<Blob> get(const std::string& key) override;
    Expected<bool> contains(const std::string& key) override;
    Expected<bool> put(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) override;
    std::string path_of(const std::string& key) const;

private:
    explicit DiskTier(std::string dir) : dir_(std::move(dir)) {}
    std::string dir_;
};

}  // namespace lazyattn::store
