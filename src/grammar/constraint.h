// What a request's output must match (structured output, docs/api.md "Structured output"), and
// the compiled form the sampler masks tokens with. A ConstraintSpec is plain text and a kind, so
// the request parsers need no grammar engine; ConstraintCompiler (constraint_compiler.h) turns it
// into a CompiledConstraint shared by every request with the same text; each generation then owns
// a ConstraintMatcher that says which tokens may come next and follows the tokens sampled.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace lazyattn::grammar {

enum class ConstraintKind : uint8_t {
    kJsonObject,  // any JSON object (OpenAI response_format json_object)
    kJsonSchema,  // a JSON document valid against the schema in `text`
    kGrammar,     // a GBNF / EBNF grammar whose start rule is `root` (llama-server's `grammar`)
    kRegex,       // a regular expression the whole output matches
    kChoice,      // exactly one of `choices`
    // XGrammar's structural tag (JSON text: {"type": "structural_tag", "format": ...}): fixed
    // strings around schema-constrained JSON, what a forced tool call compiles to
    // (server/tool_calls/tool_constraint.h).
    kStructuralTag,
};

const char* constraint_kind_name(ConstraintKind kind);

struct ConstraintSpec {
    ConstraintKind kind = ConstraintKind::kJsonObject;
    std::string text;                  // the schema (JSON text), grammar or regex
    std::vector<std::string> choices;  // kChoice
    // JSON schema: properties and items the schema does not name are refused (OpenAI's `strict`;
    // XGrammar's strict mode). True unless the request said strict: false.
    bool strict = true;
    // The request field it came from ("response_format.json_schema.schema", "grammar", ...): a
    // compile error is a 400 naming it.
    std::string field;

    // The cache key: kind, strictness and text (choices joined unambiguously).
    std::string cache_key() const;
};

class ConstraintMatcher;

// A grammar compiled against one vocabulary (opaque: the grammar engine's type stays in the
// implementation). Immutable and shared.
class CompiledConstraint {
public:
    virtual ~CompiledConstraint() = default;
    virtual std::unique_ptr<ConstraintMatcher> new_matcher() const = 0;
    virtual size_t memory_bytes() const = 0;
};

// One generation's position in its grammar. Not thread-safe: one sequence's sampler owns it.
class ConstraintMatcher {
public:
    virtual ~ConstraintMatcher() = default;
    // Computes which tokens the grammar allows next (the bitmask), once per state: the runner
    // calls it while the step's forward runs; mask_logits computes it itself if not done.
    virtual void prepare() = 0;
    // The current state's bitmask, computed by prepare() (the caller calls it first): bit i % 32
    // of word i / 32 set when token i may come next (kernels::ref::apply_token_bitmask's layout;
    // tokens past the words are refused). Once the document is complete only the stop tokens'
    // bits are set. The storage lives as long as the matcher and keeps its place, so a device
    // backend may upload it where the logits are (backend::SampleRow::bitmask).
    virtual std::span<const int32_t> bitmask() const = 0;
    // Sets every logit of a token the grammar does not allow next to -infinity (tokens at and
    // beyond the vocabulary the grammar was compiled for included): the bitmask above, applied
    // on the host. `logits` has the model's vocabulary size.
    virtual void mask_logits(std::span<float> logits) = 0;
    // Follows `token`; false when the grammar does not allow it (the state is then unchanged).
    virtual bool accept(int32_t token) = 0;
    // The grammar's document is complete and a stop token was accepted. From then on the mask
    // allows the stop tokens alone (a request that ignores EOS generates them until its length).
    virtual bool terminated() const = 0;
    // A token that ends generation (the vocabulary's first), what the sampler falls back to when
    // the logits leave nothing the grammar allows.
    virtual int32_t stop_token() const = 0;
};

}  // namespace lazyattn::grammar
