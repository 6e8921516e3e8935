// StoreTier: one level of the persistent segment store below the RAM pool (disk, Redis). Entries
// are whole encoded segments (segment_format.h) under their key; a tier never sees inside them.
// get() is called on the inference thread, put() on the store's writer thread: implementations
// are safe for that pair to run at once.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "core/status.h"

namespace lazyattn::store {

// An entry's bytes and whatever keeps them alive (a file mapping, a reply buffer, a vector).
struct Blob {
    std::shared_ptr<const void> owner;
    std::span<const uint8_t> bytes;
};

class StoreTier {
public:
    virtual ~StoreTier() = default;
    virtual std::string name() const = 0;   // "disk", "redis"
    virtual std::string where() const = 0;  // the directory or URL (logs, metrics labels)
    // The entry, kNotFound when absent, another error when the tier failed (I/O, unreachable).
    virtual Expected<Blob> get(const std::string& key) = 0;
    virtual Expected<bool> contains(const std::string& key) = 0;
    // Stores the entry whole or not at all (a reader never sees part of it). Without overwrite,
    // an entry already present is kept and false returned; two writers of one key both succeed
    // and either's (identical, or equally valid) bytes remain.
    virtual Expected<bool> put(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) = 0;
};

// Opens a tier from its --kv-store spelling: a directory path, or redis://HOST:PORT[/DB].
Expected<std::unique_ptr<StoreTier>> open_tier(const std::string& uri);

}  // namespace lazyattn::store
