#include "store/disk_tier.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/mapped_file.h"

namespace lazyattn::store {
namespace {

namespace fs = std::filesystem;

bool valid_key(const std::string& key) {
    if (key.size() < 3 || key.size() > 64) return false;
    for (char c : key) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

std::string temp_name() {
    static std::atomic<uint64_t> counter{0};
    return ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
}

Status write_all(int fd, std::span<const uint8_t> bytes, const std::string& path) {
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return io_error("writing '" + path + "' failed: " + std::strerror(n < 0 ? errno : ENOSPC));
        done += size_t(n);
    }
    return {};
}

// Temporary files of writers killed mid-write, an hour old (a live writer of another process
// sharing the directory may own a fresh one).
void remove_stale_temps(const std::string& dir) {
    std::error_code ec;
    const auto cutoff = fs::file_time_type::clock::now() - std::chrono::hours(1);
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
        if (it->path().filename().string().rfind(".tmp.", 0) == 0 && it->last_write_time(ec) < cutoff) {
            fs::remove(it->path(), ec);
        }
    }
}

double seconds_since_epoch(fs::file_time_type t) {
    const auto sys = std::chrono::time_point_cast<std::chrono::system_clock::duration>(
        t - fs::file_time_type::clock::now() + std::chrono::system_clock::now());
    return std::chrono::duration<double>(sys.time_since_epoch()).count();
}

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

void DiskTier::rescan_locked() {
    std::map<std::string, Entry> fresh;
    int64_t total = 0;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
        const fs::path& p = it->path();
        if (p.extension() != ".seg" || !it->is_regular_file(ec)) continue;
        const std::string key = p.stem().string();
        if (!valid_key(key)) continue;
        Entry e;
        e.bytes = int64_t(it->file_size(ec));
        e.last_use = seconds_since_epoch(it->last_write_time(ec));
        if (auto old = index_.find(key); old != index_.end()) e.last_use = std::max(e.last_use, old->second.last_use);
        total += e.bytes;
        latest_use_ = std::max(latest_use_, e.last_use);
        fresh[key] = e;
    }
    index_.swap(fresh);
    bytes_ = total;
}

double DiskTier::next_use_locked() {
    // Strictly increasing, so a use always counts as newer than every earlier one, even within the
    // clock's resolution and whatever a scan read off the files' times.
    latest_use_ = std::max(now_seconds(), latest_use_ + 1e-6);
    return latest_use_;
}

void DiskTier::evict_locked() {
    if (options_.max_bytes <= 0 || bytes_ <= options_.max_bytes) return;
    rescan_locked();
    if (bytes_ <= options_.max_bytes) return;
    std::vector<std::pair<double, std::string>> by_use;
    for (const auto& [key, e] : index_) by_use.emplace_back(e.last_use, key);
    std::sort(by_use.begin(), by_use.end());
    const int64_t target = options_.max_bytes / 10 * 9;
    for (const auto& [use, key] : by_use) {
        if (bytes_ <= target) break;
        std::error_code ec;
        if (fs::remove(path_of(key), ec) || !ec) {
            bytes_ -= index_[key].bytes;
            index_.erase(key);
            ++evictions_;
        }
    }
}

TierUsage DiskTier::usage() const {
    std::lock_guard<std::mutex> lock(mu_);
    TierUsage u;
    u.bytes = bytes_;
    u.max_bytes = options_.max_bytes;
    u.evictions = evictions_;
    return u;
}

Expected<std::unique_ptr<DiskTier>> DiskTier::open(const std::string& dir, const TierOptions& options) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) {
        return io_error("--kv-store '" + dir + "': cannot create the directory" + (ec ? ": " + ec.message() : ""));
    }
    if (::access(dir.c_str(), R_OK | W_OK | X_OK) != 0) {
        return io_error("--kv-store '" + dir + "' is not writable: " + std::strerror(errno));
    }
    remove_stale_temps(dir);
    std::unique_ptr<DiskTier> tier(new DiskTier(dir, options));
    std::lock_guard<std::mutex> lock(tier->mu_);
    tier->rescan_locked();
    return tier;
}

std::string DiskTier::path_of(const std::string& key) const {
    return dir_ + "/" + key.substr(0, 2) + "/" + key + ".seg";
}

Expected<Blob> DiskTier::get(const std::string& key) {
    if (!valid_key(key)) return invalid_argument("bad store key '" + key + "'");
    const std::string path = path_of(key);
    auto mapped = MappedFile::open(path);
    if (!mapped.ok()) {
        struct stat st {};
        if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return not_found("no entry " + key);
        return mapped.status();
    }
    auto owner = std::make_shared<MappedFile>(std::move(mapped).value());
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto it = index_.find(key); it != index_.end()) it->second.last_use = next_use_locked();
    }
    Blob b;
    b.bytes = {owner->data(), owner->size()};
    b.owner = std::move(owner);
    return b;
}

Expected<bool> DiskTier::contains(const std::string& key) {
    if (!valid_key(key)) return invalid_argument("bad store key '" + key + "'");
    struct stat st {};
    if (::stat(path_of(key).c_str(), &st) == 0) return true;
    if (errno == ENOENT) return false;
    return io_error("stat '" + path_of(key) + "': " + std::strerror(errno));
}

Expected<bool> DiskTier::put(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) {
    if (!valid_key(key)) return invalid_argument("bad store key '" + key + "'");
    const std::string final_path = path_of(key);
    const std::string subdir = dir_ + "/" + key.substr(0, 2);
    if (::mkdir(subdir.c_str(), 0755) != 0 && errno != EEXIST) {
        return io_error("cannot create '" + subdir + "': " + std::strerror(errno));
    }
    if (!overwrite) {
        LA_ASSIGN_OR_RETURN(const bool present, contains(key));
        if (present) return false;
    }
    const std::string tmp = subdir + "/" + temp_name();
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return io_error("cannot create '" + tmp + "': " + std::strerror(errno));
    Status st = write_all(fd, bytes, tmp);
    if (::close(fd) != 0 && st.ok()) st = io_error("closing '" + tmp + "' failed: " + std::strerror(errno));
    // rename() replaces atomically: a reader maps the old entry or the new one, never a mix.
    if (st.ok() && ::rename(tmp.c_str(), final_path.c_str()) != 0) {
        st = io_error("renaming to '" + final_path + "' failed: " + std::strerror(errno));
    }
    if (!st.ok()) {
        ::unlink(tmp.c_str());
        return st;
    }
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = index_[key];
    bytes_ += int64_t(bytes.size()) - e.bytes;
    e.bytes = int64_t(bytes.size());
    e.last_use = next_use_locked();  // the newest survives eviction
    evict_locked();
    return true;
}

}  // namespace lazyattn::store
