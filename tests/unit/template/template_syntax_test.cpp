#include <gtest/gtest.h>

#include "template/template.h"

namespace lazyattn::tmpl {
namespace {

std::string render(const std::string& source, const Value& context = Value::dict()) {
    auto t = Template::parse(source);
    if (!t.ok()) return "PARSE ERROR: " + t.status().message();
    auto out = t->render(context, {}, 0);
    return out.ok() ? *out : "ERROR: " + out.status().message();
}

TEST(TemplateSyntax, Smoke) {
    EXPECT_EQ(render("a{{ 1 + 2 }}b"), "a3b");
}

}  // namespace
}  // namespace lazyattn::tmpl
