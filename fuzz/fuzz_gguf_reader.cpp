// libFuzzer target: arbitrary bytes through GgufFile::parse, every typed getter, ModelConfig and
// the dequantization of the first row of every tensor. Besides the sanitizers' checks it asserts
// the parser's promises: every tensor's bytes lie inside the input, sizes agree with the type's
// geometry, and a config that from_gguf accepts passes validate().
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "loader/dequantize.h"
#include "loader/gguf_file.h"
#include "model/model_config.h"

namespace {

using namespace lazyattn;

constexpr int64_t kMaxRowElements = int64_t{1} << 20;

void exercise_getters(const loader::GgufFile& f) {
    for (const auto& [key, value] : f.metadata()) {
        (void)f.get_string(key);
        (void)f.get_int(key);
        (void)f.get_float(key);
        (void)f.get_bool(key);
        (void)f.get_string_array(key);
        (void)f.get_int_array(key);
        (void)f.get_float_array(key);
        LA_CHECK(f.find(key) == &value);
    }
}

void check_and_dequantize_tensors(const loader::GgufFile& f, const uint8_t* data, size_t size) {
    std::vector<float> row;
    for (const loader::GgufTensorInfo& t : f.tensors()) {
        LA_CHECK(f.find_tensor(t.name) == &t);
        const uint8_t* begin = f.tensor_data(t);
        LA_CHECK(begin >= data && begin <= data + size);
        LA_CHECK(t.num_bytes <= static_cast<size_t>(data + size - begin));
        const loader::GgmlTypeTraits traits = loader::ggml_type_traits(t.type);
        LA_CHECK(traits.block_size > 0 && t.dims[0] % traits.block_size == 0);
        LA_CHECK(t.num_bytes == static_cast<uint64_t>(t.num_elements / traits.block_size) * traits.type_size);
        const int64_t n = t.dims[0];
        if (!traits.can_dequantize || n > kMaxRowElements) continue;
        row.resize(static_cast<size_t>(n));
        const Status st = loader::dequantize_row(t.type, begin, row.data(), n);
        LA_CHECK(st.ok());
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto parsed = loader::GgufFile::parse(data, size);
    if (!parsed.ok()) {
        LA_CHECK(!parsed.status().message().empty());
        return 0;
    }
    const loader::GgufFile& f = **parsed;
    LA_CHECK(f.version() == 2 || f.version() == 3);
    LA_CHECK(f.alignment() > 0 && (f.alignment() & (f.alignment() - 1)) == 0);
    exercise_getters(f);
    check_and_dequantize_tensors(f, data, size);
    auto config = model::ModelConfig::from_gguf(f);
    if (config.ok()) {
        LA_CHECK(config->validate().ok());
        LA_CHECK(!config->describe().empty());
    } else {
        LA_CHECK(!config.status().message().empty());
    }
    return 0;
}
