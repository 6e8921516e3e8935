// Jinja's grammar (the part chat templates use) from tokens to statements. Operator precedence
// and the places filters and tests bind follow jinja2's parser: `a + b|f` filters b only, `-x|f`
// filters -x, `not a in b` is not (a in b), `a if c` without else gives undefined. Unknown tags are
// errors at parse time; unknown filters and tests only when evaluated (jinja2 too lets a template
// that names, say, from_json in a branch it never takes render).
#pragma once

#include <vector>

#include "template/ast.h"
#include "template/lexer.h"

namespace lazyattn::tmpl {

// Throws TemplateError with the line of the offending token.
Body parse_template(const std::vector<Token>& tokens);

}  // namespace lazyattn::tmpl
