#include <gtest/gtest.h>

#include "http/router.h"

namespace lazyattn::http {
namespace {

TEST(Router, MatchesLiteralsAndParametersAndTells404From405) {
    Router r;
    int hit = 0;
    r.add("GET", "/v1/documents", Lane::kLight, [&](const HttpRequest&, HttpResponse&, const ClientLink&) { hit = 1; });
    r.add("DELETE", "/v1/documents/{id}", Lane::kHeavy,
          [&](const HttpRequest&, HttpResponse&, const ClientLink&) { hit = 2; });
    auto m = r.match("DELETE", "/v1/documents/abc");
    ASSERT_NE(m.route, nullptr);
    EXPECT_EQ(m.route->lane, Lane::kHeavy);
    ASSERT_EQ(m.params.size(), 1u);
    EXPECT_EQ(m.params[0], "abc");
    EXPECT_EQ(r.match("GET", "/v1/documents").route->lane, Lane::kLight);
    EXPECT_EQ(r.match("POST", "/v1/documents").status, 405);
    EXPECT_EQ(r.match("DELETE", "/v1/documents/").status, 404);  // empty parameter
    EXPECT_EQ(r.match("DELETE", "/v1/documents/a/b").status, 404);
    EXPECT_EQ(r.match("GET", "/nothing").status, 404);
}

}  // namespace
}  // namespace lazyattn::http
