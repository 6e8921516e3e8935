// ConstraintCompiler: compiles a request's ConstraintSpec against the served model's vocabulary
// with XGrammar (docs/design.md "Structured output"), within bounds a hostile request cannot
// pass: the text's size and nesting, the compile's wall time, and a cache of compiled grammars
// keyed by their text, least recently used first out, bounded in count and bytes.
//
// One per served model (the vocabulary is read once, on the first compile). Thread-safe: HTTP
// workers compile concurrently; the same text compiles once and is then shared.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "grammar/constraint.h"

namespace lazyattn::tokenizer {
class Tokenizer;
}

namespace lazyattn::grammar {

struct CompileLimits {
    size_t max_text_bytes = 64 * 1024;  // schema, grammar or regex text (choices together)
    int32_t max_nesting = 64;           // brackets / JSON depth: the engine recurses on them
    int32_t max_choices = 1024;
    int64_t timeout_ms = 10'000;  // one compile's wall time
    size_t cache_entries = 256;
    size_t cache_bytes = size_t(256) << 20;
};

// Whether this build has the grammar engine (XGrammar was fetched and built with it).
bool engine_available();

// A JSON schema's draft-4 tuple validation (`items` as a list of schemas, with `additionalItems`
// for the rest) in draft 2020-12's words, which the grammar engine reads: `prefixItems` holds the
// list and `items` takes additionalItems' place (absent: further items are as the schema's
// strictness says). Every subschema is rewritten; values that are data (const, enum, default,
// examples) are left as they are. Anything else is unchanged.
nlohmann::json with_prefix_items(nlohmann::json schema);

class ConstraintCompiler {
public:
    // `tokenizer` must outlive the compiler.
    explicit ConstraintCompiler(const tokenizer::Tokenizer& tokenizer, CompileLimits limits = {});
    ~ConstraintCompiler();

    // kInvalidArgument with the engine's reason (the spec's field is for the caller to name);
    // kUnsupported when this build has no grammar engine; kUnavailable when earlier compiles
    // that ran past the time limit still hold the engine.
    Expected<std::shared_ptr<const CompiledConstraint>> compile(const ConstraintSpec& spec);
    // Whether `spec` passes the bounds and the engine's converter (a schema or regex that does
    // not convert is refused here as by compile()), without computing its token masks, the
    // costly part of a compile: for schemas that are compiled only inside a larger grammar (a
    // forced tool call's structural tag holds every tool's parameters). Nothing is cached or
    // counted. kUnsupported without the engine.
    Status check(const ConstraintSpec& spec) const;

    struct Stats {
        int64_t compiles = 0;
        int64_t cache_hits = 0;
        size_t cached = 0;
        size_t cached_bytes = 0;
        int runaway = 0;  // compiles past the time limit still running on their own threads
    };
    Stats stats() const;

private:
    struct Engine;  // the vocabulary and the compiler, made on the first compile
    Status check_bounds(const ConstraintSpec& spec) const;
    std::shared_ptr<const CompiledConstraint> cached(const std::string& key);
    void remember(const std::string& key, std::shared_ptr<const CompiledConstraint> compiled);

    const tokenizer::Tokenizer& tokenizer_;
    CompileLimits limits_;
    mutable std::mutex engine_mu_;
    std::shared_ptr<Engine> engine_;

    mutable std::mutex cache_mu_;
    using Entry = std::pair<std::string, std::shared_ptr<const CompiledConstraint>>;
    std::list<Entry> lru_;  // most recent first
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
    size_t cached_bytes_ = 0;
    Stats stats_;
};

}  // namespace lazyattn::grammar
