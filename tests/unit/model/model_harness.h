// A model on a backend with its own small paged KV pool, for whole forward passes in tests:
// prefill a token list in chunks and collect every position's logits.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/backend.h"
#include "backend/kv_memory.h"
#include "engine/runner/batch_builder.h"
#include "kv/block_pool.h"
#include "model/model.h"

namespace lazyattn::testing {

constexpr int32_t kBlock = 16;

struct Harness {
    std::unique_ptr<backend::Backend> backend;
    std::unique_ptr<model::Model> model;
    std::unique_ptr<kv::BlockPool> pool;
    std::unique_ptr<backend::KvMemory> kv;  // the backend's pool

    Harness(const std::string& path, std::unique_ptr<backend::Backend> be) : backend(std::move(be)) {
        auto m = model::Model::load(path, backend.get());
        EXPECT_TRUE(m.ok()) << m.status().to_string();
        model = std::move(m).value();
        kv::KvShape shape{model->config().num_layers, 64, model->config().num_kv_heads, kBlock,
                          model->config().head_dim};
        pool = std::make_unique<kv::BlockPool>(shape.num_blocks);
        auto memory = backend->allocate_kv(shape);
        EXPECT_TRUE(memory.ok()) << memory.status().to_string();
        kv = std::move(memory).value();
    }
    std::vector<int32_t> blocks_for(int32_t tokens) { return *pool->allocate((tokens + kBlock - 1) / kBlock); }
    // Logits of every position of `tokens`, prefilled in chunks of `chunk`.
    std::vector<float> prefill_logits(const std::vector<int32_t>& tokens, int32_t chunk) {
        auto blocks = blocks_for(int32_t(tokens.size()));
        std::vector<float> all, step;
        for (size_t b = 0; b < tokens.size(); b += chunk) {
            const size_t e = std::min(tokens.size(), b + chunk);
            model::ForwardBatch batch;
            engine::add_plain_sequence(batch, {tokens.begin() + b, tokens.begin() + e}, int32_t(b), blocks, kBlock, 2);
            const Status st = model->forward(batch, *kv, &step);
            EXPECT_TRUE(st.ok()) << st.to_string();
            all.insert(all.end(), step.begin(), step.end());
        }
        pool->unref_all(blocks);
        return all;
    }
};

}  // namespace lazyattn::testing
