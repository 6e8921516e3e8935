// The module's edge: exceptions used inside the interpreter become Status here.
#include "template/template.h"

#include <new>

#include "template/lexer.h"
#include "template/parser.h"
#include "template/template_error.h"

namespace lazyattn::tmpl {
namespace {

std::string with_line(const TemplateError& e) {
    return (e.line() > 0 ? "template line " + std::to_string(e.line()) + ": " : std::string("template: ")) + e.what();
}

}  // namespace

Expected<Template> Template::parse(std::string_view source) {
    try {
        Template t;
        t.body_ = std::make_shared<const Body>(parse_template(tokenize(source)));
        return t;
    } catch (const TemplateError& e) {
        return invalid_argument(with_line(e));
    } catch (const std::bad_alloc&) {
        return resource_exhausted("template: out of memory while parsing");
    }
}

Expected<std::string> Template::render(const Value& context, const RenderLimits& limits, std::time_t now) const {
    if (!body_) return internal_error("template: render() on a template that was not parsed");
    try {
        Interpreter interpreter(limits, now);
        return interpreter.render(*body_, context);
    } catch (const TemplateLimitError& e) {
        return out_of_range(with_line(e));
    } catch (const TemplateError& e) {
        return invalid_argument(with_line(e));
    } catch (const std::bad_alloc&) {
        return resource_exhausted("template: out of memory while rendering");
    } catch (const std::length_error&) {
        return resource_exhausted("template: a value grew beyond what memory allows");
    } catch (const std::exception& e) {
        return internal_error(std::string("template: ") + e.what());
    }
}

}  // namespace lazyattn::tmpl
