// A build without XGrammar (its source distribution could not be fetched or built when lazyattn
// was configured): every constraint is refused with a message saying so.
#include "grammar/constraint_compiler.h"
#include "grammar/grammar_engine.h"

namespace lazyattn::grammar {

bool engine_available() { return false; }

std::shared_ptr<GrammarEngine> make_grammar_engine(const tokenizer::Tokenizer&) { return nullptr; }

Expected<std::string> engine_ebnf(const ConstraintSpec&) {
    return unsupported("structured output is not available in this build");
}

}  // namespace lazyattn::grammar
