#include "grammar/constraint_compiler.h"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "grammar/grammar_engine.h"

namespace lazyattn::grammar {

struct ConstraintCompiler::Engine {
    std::shared_ptr<GrammarEngine> engine;
    // Compiles that passed the time limit and still run on their own threads: while too many
    // do, new compiles are refused rather than piling more work on the same cores.
    std::shared_ptr<std::atomic<int>> runaway = std::make_shared<std::atomic<int>>(0);
};

namespace {

constexpr int kMaxRunawayCompiles = 2;
// The largest repetition count or length bound a grammar, regex or schema may ask for: the engine
// expands some of them into that many grammar elements.
constexpr int64_t kMaxRepetition = 10'000;

// Bracket depth outside string literals (JSON and GBNF quote with "), escapes skipped. Brackets
// inside character classes count too: an over-count only refuses sooner.
int32_t nesting_depth(const std::string& text, bool quoted_strings) {
    int32_t depth = 0, deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\\') {
            ++i;
            continue;
        }
        if (quoted_strings && c == '"') in_string = !in_string;
        if (in_string) continue;
        if (c == '(' || c == '[' || c == '{') deepest = std::max(deepest, ++depth);
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    }
    return deepest;
}

// The largest number inside a {n} / {n,m} repetition of a grammar or regex.
int64_t largest_repetition(const std::string& text) {
    int64_t largest = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '{') continue;
        int64_t n = 0;
        for (size_t j = i + 1; j < text.size() && j < i + 40; ++j) {
            const char c = text[j];
            if (c >= '0' && c <= '9') {
                n = std::min<int64_t>(n * 10 + (c - '0'), INT64_MAX / 20);
                largest = std::max(largest, n);
            } else if (c == ',' || c == ' ') {
                n = 0;
            } else {
                break;
            }
        }
    }
    return largest;
}

// The length and count bounds of a schema (minLength, maxItems, ...) anywhere in it.
int64_t largest_schema_bound(const nlohmann::json& j) {
    int64_t largest = 0;
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) {
            const std::string& k = it.key();
            const bool bound = (k.rfind("min", 0) == 0 || k.rfind("max", 0) == 0) && k != "minimum" && k != "maximum";
            if (bound && it->is_number()) largest = std::max(largest, int64_t(std::min(it->get<double>(), 1e15)));
            largest = std::max(largest, largest_schema_bound(*it));
        }
    } else if (j.is_array()) {
        for (const auto& e : j) largest = std::max(largest, largest_schema_bound(e));
    }
    return largest;
}

}  // namespace

nlohmann::json with_prefix_items(nlohmann::json schema) {
    if (schema.is_array()) {
        for (auto& e : schema) e = with_prefix_items(std::move(e));
        return schema;
    }
    if (!schema.is_object()) return schema;
    for (auto it = schema.begin(); it != schema.end(); ++it) {
        const std::string& k = it.key();
        if (k == "const" || k == "enum" || k == "default" || k == "examples") continue;  // data, not schemas
        *it = with_prefix_items(std::move(*it));
    }
    const auto items = schema.find("items");
    if (items == schema.end() || !items->is_array() || schema.contains("prefixItems")) return schema;
    schema["prefixItems"] = std::move(*items);
    schema.erase("items");
    if (const auto rest = schema.find("additionalItems"); rest != schema.end()) {
        schema["items"] = std::move(*rest);
        schema.erase("additionalItems");
    }
    return schema;
}

namespace {

// The spec as the grammar engine reads it: a schema's draft-4 tuples as prefixItems.
ConstraintSpec in_engine_words(const ConstraintSpec& asked) {
    if (asked.kind != ConstraintKind::kJsonSchema || asked.text.find("\"items\"") == std::string::npos) return asked;
    const auto schema = nlohmann::json::parse(asked.text, nullptr, false);  // valid: check_bounds parsed it
    if (schema.is_discarded()) return asked;
    nlohmann::json rewritten = with_prefix_items(schema);
    if (rewritten == schema) return asked;
    ConstraintSpec spec = asked;
    spec.text = rewritten.dump();
    return spec;
}

}  // namespace

ConstraintCompiler::ConstraintCompiler(const tokenizer::Tokenizer& tokenizer, CompileLimits limits)
    : tokenizer_(tokenizer), limits_(limits) {}

ConstraintCompiler::~ConstraintCompiler() = default;

Status ConstraintCompiler::check_bounds(const ConstraintSpec& spec) const {
    size_t bytes = spec.text.size();
    for (const std::string& c : spec.choices) bytes += c.size();
    if (bytes > limits_.max_text_bytes) {
        return invalid_argument("is " + std::to_string(bytes) + " bytes; the server accepts at most " +
                                std::to_string(limits_.max_text_bytes));
    }
    const int32_t depth = nesting_depth(spec.text, spec.kind != ConstraintKind::kRegex);
    if (depth > limits_.max_nesting) {
        return invalid_argument("nests " + std::to_string(depth) + " levels deep; the server accepts at most " +
                                std::to_string(limits_.max_nesting));
    }
    int64_t repetition = 0;
    switch (spec.kind) {
        case ConstraintKind::kJsonObject:
            break;
        case ConstraintKind::kStructuralTag:  // schemas inside: the same bounds as one schema's
        case ConstraintKind::kJsonSchema: {
            const auto schema = nlohmann::json::parse(spec.text, nullptr, false);
            if (schema.is_discarded()) return invalid_argument("is not valid JSON");
            if (!schema.is_object() && !schema.is_boolean()) return invalid_argument("must be a JSON object");
            repetition = largest_schema_bound(schema);
            break;
        }
        case ConstraintKind::kGrammar:
        case ConstraintKind::kRegex:
            repetition = largest_repetition(spec.text);
            break;
        case ConstraintKind::kChoice:
            if (spec.choices.empty()) return invalid_argument("must list at least one choice");
            if (spec.choices.size() > size_t(limits_.max_choices)) {
                return invalid_argument("lists " + std::to_string(spec.choices.size()) +
                                        " choices; the server accepts at most " + std::to_string(limits_.max_choices));
            }
            for (const std::string& c : spec.choices) {
                if (c.empty()) return invalid_argument("has an empty choice");
            }
            break;
    }
    if (repetition > kMaxRepetition) {
        return invalid_argument("asks for a repetition or length bound of " + std::to_string(repetition) +
                                "; the server accepts at most " + std::to_string(kMaxRepetition));
    }
    return {};
}

std::shared_ptr<const CompiledConstraint> ConstraintCompiler::cached(const std::string& key) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    ++stats_.cache_hits;
    return it->second->second;
}

void ConstraintCompiler::remember(const std::string& key, std::shared_ptr<const CompiledConstraint> compiled) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    ++stats_.compiles;
    if (index_.count(key) != 0) return;  // compiled twice at once: the first stays
    const size_t bytes = compiled->memory_bytes() + key.size();
    if (bytes > limits_.cache_bytes) return;
    lru_.emplace_front(key, std::move(compiled));
    index_[key] = lru_.begin();
    cached_bytes_ += bytes;
    while (lru_.size() > limits_.cache_entries || cached_bytes_ > limits_.cache_bytes) {
        const Entry& last = lru_.back();
        cached_bytes_ -= last.second->memory_bytes() + last.first.size();
        index_.erase(last.first);
        lru_.pop_back();
    }
}

ConstraintCompiler::Stats ConstraintCompiler::stats() const {
    std::shared_ptr<Engine> engine;
    {
        std::lock_guard<std::mutex> lock(engine_mu_);
        engine = engine_;
    }
    std::lock_guard<std::mutex> lock(cache_mu_);
    Stats s = stats_;
    s.runaway = engine ? engine->runaway->load() : 0;
    s.cached = lru_.size();
    s.cached_bytes = cached_bytes_;
    return s;
}

Status ConstraintCompiler::check(const ConstraintSpec& asked) const {
    if (!engine_available()) return unsupported("structured output is not available in this build");
    if (Status st = check_bounds(asked); !st.ok()) return st;
    if (asked.kind == ConstraintKind::kStructuralTag) return {};  // its schemas are checked one by one
    auto ebnf = engine_ebnf(in_engine_words(asked));
    return ebnf.ok() ? Status{} : ebnf.status();
}

Expected<std::shared_ptr<const CompiledConstraint>> ConstraintCompiler::compile(const ConstraintSpec& asked) {
    if (!engine_available()) {
        return unsupported(
            "structured output is not available: this lazyattn was built without its grammar engine (XGrammar; "
            "scripts/build_xgrammar.sh could not fetch or build it when lazyattn was configured)");
    }
    if (Status st = check_bounds(asked); !st.ok()) return st;
    const ConstraintSpec spec = in_engine_words(asked);
    const std::string key = spec.cache_key();
    if (auto hit = cached(key)) return hit;

    std::shared_ptr<Engine> engine;
    {
        std::lock_guard<std::mutex> lock(engine_mu_);
        if (!engine_) {
            engine_ = std::make_shared<Engine>();
            engine_->engine = make_grammar_engine(tokenizer_);
        }
        engine = engine_;
    }
    if (!engine->engine) return unsupported("structured output is not available in this build");
    if (engine->runaway->load() >= kMaxRunawayCompiles) {
        return unavailable("the grammar engine is still busy with earlier grammars that passed the compile time limit");
    }
    // The compile runs on a thread of its own so that a grammar slower than the limit costs the
    // request a 400 at the limit, not the worker; the thread (holding the engine alive) finishes
    // on its own and is counted until it does.
    using Result = Expected<std::shared_ptr<const CompiledConstraint>>;
    auto done = std::make_shared<std::promise<Result>>();
    std::future<Result> result = done->get_future();
    struct Race {
        std::mutex mu;
        bool finished = false;
        bool timed_out = false;
    };
    auto race = std::make_shared<Race>();
    std::thread([engine, spec, done, race] {
        done->set_value(engine->engine->compile(spec));
        std::lock_guard<std::mutex> lock(race->mu);
        race->finished = true;
        if (race->timed_out) engine->runaway->fetch_sub(1);
    }).detach();
    if (result.wait_for(std::chrono::milliseconds(limits_.timeout_ms)) != std::future_status::ready) {
        std::lock_guard<std::mutex> lock(race->mu);
        if (!race->finished) {
            race->timed_out = true;
            engine->runaway->fetch_add(1);
            return invalid_argument("did not compile within " + std::to_string(limits_.timeout_ms) + " ms");
        }
    }
    Result r = result.get();
    if (r.ok()) remember(key, r.value());
    return r;
}

}  // namespace lazyattn::grammar
