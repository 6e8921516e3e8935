// RequestHandle: what a listener sees when it hears of an event. A server stream is woken by
// the callback and then reads the handle; the result it reads must already hold the event's
// figures.
#include "engine/request/request_handle.h"

#include <gtest/gtest.h>

#include <memory>

namespace lazyattn::engine {
namespace {

TEST(RequestHandle, TheEndsFiguresAreStoredBeforeTheCallbackHearsOfIt) {
    std::shared_ptr<RequestHandle> handle;
    RequestStats seen;
    handle = std::make_shared<RequestHandle>(7, [&](const RequestEvent& e) {
        if (e.kind != RequestEvent::Kind::kFinished) return;
        seen = handle->stats();
    });
    RequestStats stats;
    stats.num_prompt_tokens = 41;
    stats.num_generated = 3;
    handle->push_text("abc");
    handle->finish(FinishReason::kLength, stats, Status());
    EXPECT_EQ(seen.num_prompt_tokens, 41);
    EXPECT_EQ(seen.num_generated, 3);
    EXPECT_TRUE(handle->finished());
}

}  // namespace
}  // namespace lazyattn::engine
