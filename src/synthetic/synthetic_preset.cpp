// Synthetic presets: the GGUF image is laid out by GgufWriter with deferred tensors (header and
// tensor table first), then each matrix is generated in chunks of rows straight into the mapped
// in-memory file and quantized there. Values are uniform with the standard deviation of
// synthetic_model.cpp's rule (0.5 / sqrt(fan_in), clamped to [0.02, 0.1]; norms 1 +- 0.02), and
// every chunk draws from its own generator seeded by (seed, tensor name, chunk index): the same
// spec gives the same bytes on any number of threads.
#include "synthetic/synthetic_preset.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "core/log.h"
#include "core/progress.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "loader/gguf_file.h"
#include "loader/gguf_writer.h"
#include "loader/quantize.h"
#include "synthetic/synthetic_model.h"

namespace lazyattn::synthetic {

using namespace lazyattn::loader;  // the GGUF writer and reader this library drives
namespace {

// splitmix64 (as synthetic_model.cpp): fast and identical on every platform.
uint64_t mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t name_seed(uint64_t seed, const std::string& name) {
    uint64_t h = 0xcbf29ce484222325ull ^ seed;  // FNV-1a over the name
    for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

// n values uniform in mean +- sigma * sqrt(3) (standard deviation sigma).
void fill_uniform(uint64_t seed, float mean, float sigma, float* out, int64_t n) {
    const float half_width = sigma * 1.7320508f;
    uint64_t state = seed;
    for (int64_t i = 0; i < n; ++i) {
        state += 0x9e3779b97f4a7c15ull;
        const uint64_t r = mix(state);
        const float u = float(r >> 40) * 0x1.0p-24f;  // [0, 1)
        out[i] = mean + half_width * (2.0f * u - 1.0f);
    }
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

const GgmlType kWeightTypes[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
                                 GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K,
                                 GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};

std::string type_list() {
    std::string s;
    for (GgmlType t : kWeightTypes) s += (s.empty() ? "" : ", ") + lower(ggml_type_name(t));
    return s;
}

std::string preset_list() {
    std::string s;
    for (const auto& p : synthetic_presets()) s += (s.empty() ? "" : ", ") + p.name + " (" + p.like + ")";
    return s;
}

// A tensor of the image: a matrix [rows = out, cols = in] of the weight type, or an F32 vector.
struct TensorPlan {
    std::string name;
    int64_t cols;  // ggml dims[0]
    int64_t rows;  // ggml dims[1]; 1 for a vector
    bool matrix;
    float mean;
    float sigma;
};

std::vector<TensorPlan> plan_tensors(const SyntheticPreset& p) {
    std::vector<TensorPlan> t;
    auto matrix = [&](const std::string& name, int64_t in, int64_t out, float sigma = 0.0f) {
        if (sigma <= 0.0f) sigma = std::clamp(0.5f / std::sqrt(float(in)), 0.02f, 0.1f);
        t.push_back({name, in, out, true, 0.0f, sigma});
    };
    auto vector = [&](const std::string& name, int64_t n, float mean, float sigma) {
        t.push_back({name, n, 1, false, mean, sigma});
    };
    const int64_t q_dim = int64_t(p.head_dim) * p.num_heads, kv_dim = int64_t(p.head_dim) * p.num_kv_heads;
    matrix("token_embd.weight", p.hidden, p.vocab_size, 0.1f);  // no fan-in sum: the top of the range
    vector("output_norm.weight", p.hidden, 1.0f, 0.02f);
    if (!p.tied_embeddings) matrix("output.weight", p.hidden, p.vocab_size);
    for (int32_t l = 0; l < p.num_layers; ++l) {
        const std::string b = "blk." + std::to_string(l) + ".";
        vector(b + "attn_norm.weight", p.hidden, 1.0f, 0.02f);
        matrix(b + "attn_q.weight", p.hidden, q_dim);
        matrix(b + "attn_k.weight", p.hidden, kv_dim);
        matrix(b + "attn_v.weight", p.hidden, kv_dim);
        if (p.arch == "qwen2") {
            vector(b + "attn_q.bias", q_dim, 0.0f, 0.02f);
            vector(b + "attn_k.bias", kv_dim, 0.0f, 0.02f);
            vector(b + "attn_v.bias", kv_dim, 0.0f, 0.02f);
        }
        matrix(b + "attn_output.weight", q_dim, p.hidden);
        vector(b + "ffn_norm.weight", p.hidden, 1.0f, 0.02f);
        matrix(b + "ffn_gate.weight", p.hidden, p.ffn);
        matrix(b + "ffn_up.weight", p.hidden, p.ffn);
        matrix(b + "ffn_down.weight", p.ffn, p.hidden);
    }
    return t;
}

// Copies the tokenizer.* metadata of `src`, the token list and types padded to vocab_size.
Status add_tokenizer(GgufWriter& w, const GgufFile& src, int32_t vocab_size) {
    LA_ASSIGN_OR_RETURN(std::vector<std::string> tokens, src.get_string_array("tokenizer.ggml.tokens"));
    if (int64_t(tokens.size()) > vocab_size) {
        return invalid_argument("the tokenizer has " + std::to_string(tokens.size()) + " tokens, more than the " +
                                std::to_string(vocab_size) + " of the synthetic model");
    }
    const size_t real = tokens.size();
    for (int64_t id = int64_t(real); id < vocab_size; ++id) tokens.push_back("<oov_" + std::to_string(id) + ">");
    for (const auto& [key, v] : src.metadata()) {
        if (key.rfind("tokenizer.", 0) != 0) continue;
        if (key == "tokenizer.ggml.tokens") {
            w.add_string_array(key, tokens);
        } else if (key == "tokenizer.ggml.token_type") {
            LA_ASSIGN_OR_RETURN(std::vector<int64_t> types, src.get_int_array(key));
            std::vector<int32_t> t32(types.begin(), types.end());
            t32.resize(tokens.size(), 1);  // padding: normal tokens no merge produces
            w.add_i32_array(key, t32);
        } else if (v.type == GgufValueType::kString) {
            w.add_string(key, std::get<std::string>(v.value));
        } else if (v.type == GgufValueType::kBool) {
            w.add_bool(key, std::get<bool>(v.value));
        } else if (v.type == GgufValueType::kFloat32 || v.type == GgufValueType::kFloat64) {
            w.add_f32(key, float(std::get<double>(v.value)));
        } else if (v.type == GgufValueType::kArray && v.array_type == GgufValueType::kString) {
            w.add_string_array(key, std::get<std::vector<std::string>>(v.value));
        } else if (v.type == GgufValueType::kArray) {
            auto ints = src.get_int_array(key);
            if (!ints.ok()) continue;  // float arrays (scores) are not used by byte-level BPE
            w.add_i32_array(key, std::vector<int32_t>(ints.value().begin(), ints.value().end()));
        } else {
            LA_ASSIGN_OR_RETURN(int64_t value, src.get_int(key));
            w.add_u32(key, uint32_t(value));
        }
    }
    return {};
}

void add_model_metadata(GgufWriter& w, const SyntheticSpec& s) {
    const SyntheticPreset& p = s.preset;
    const std::string& a = p.arch;
    w.add_string("general.architecture", a);
    w.add_string("general.name", "synthetic " + p.name + " (" + p.like + " shape, random weights)");
    w.add_u32("general.file_type", gguf_file_type(s.weight_type));
    w.add_u32("general.quantization_version", 2);
    w.add_u32(a + ".block_count", uint32_t(p.num_layers));
    w.add_u32(a + ".context_length", uint32_t(p.context_length));
    w.add_u32(a + ".embedding_length", uint32_t(p.hidden));
    w.add_u32(a + ".feed_forward_length", uint32_t(p.ffn));
    w.add_u32(a + ".attention.head_count", uint32_t(p.num_heads));
    w.add_u32(a + ".attention.head_count_kv", uint32_t(p.num_kv_heads));
    w.add_f32(a + ".rope.freq_base", p.rope_freq_base);
    w.add_f32(a + ".attention.layer_norm_rms_epsilon", a == "llama" ? 1e-5f : 1e-6f);
    w.add_u32(a + ".rope.dimension_count", uint32_t(p.head_dim));
    if (int64_t(p.head_dim) * p.num_heads != p.hidden) {
        w.add_u32(a + ".attention.key_length", uint32_t(p.head_dim));
        w.add_u32(a + ".attention.value_length", uint32_t(p.head_dim));
    }
    w.add_u32(a + ".vocab_size", uint32_t(p.vocab_size));
}

// An anonymous in-memory file mapped for writing.
class MemFile {
public:
    ~MemFile() {
        if (map_ != nullptr) munmap(map_, size_);
        if (fd_ >= 0) ::close(fd_);
    }
    Status create(const std::string& name, uint64_t size) {
        fd_ = memfd_create(name.c_str(), MFD_CLOEXEC);
        if (fd_ < 0) return io_error(std::string("memfd_create: ") + std::strerror(errno));
        if (ftruncate(fd_, off_t(size)) != 0) return io_error(std::string("ftruncate: ") + std::strerror(errno));
        void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
        if (p == MAP_FAILED) return io_error(std::string("mmap of the in-memory model: ") + std::strerror(errno));
        map_ = static_cast<uint8_t*>(p);
        size_ = size;
        return {};
    }
    uint8_t* data() { return map_; }
    // Unmaps and hands the descriptor over (kept open for the process's lifetime).
    int release() {
        munmap(map_, size_);
        map_ = nullptr;
        const int fd = fd_;
        fd_ = -1;
        return fd;
    }

private:
    int fd_ = -1;
    uint8_t* map_ = nullptr;
    uint64_t size_ = 0;
};

Expected<std::string> build_image(const SyntheticSpec& spec, const GgufFile& tokenizer_source, int num_threads) {
    const SyntheticPreset& p = spec.preset;
    GgufWriter w;
    add_model_metadata(w, spec);
    LA_RETURN_IF_ERROR(add_tokenizer(w, tokenizer_source, p.vocab_size));
    const std::vector<TensorPlan> plan = plan_tensors(p);
    for (const TensorPlan& t : plan) {
        if (t.matrix) {
            w.add_tensor_deferred(t.name, {t.cols, t.rows}, spec.weight_type);
        } else {
            w.add_tensor_deferred(t.name, {t.cols}, GgmlType::kF32);
        }
    }
    const std::vector<uint8_t> header = w.header_bytes();
    const uint64_t total = header.size() + w.data_bytes();
    MemFile file;
    LA_RETURN_IF_ERROR(file.create("lazyattn-" + p.name, total));
    std::memcpy(file.data(), header.data(), header.size());

    // Work items: chunks of about 1M elements of whole rows.
    struct Chunk {
        size_t tensor;
        int64_t row0, rows;
    };
    std::vector<Chunk> chunks;
    for (size_t i = 0; i < plan.size(); ++i) {
        const int64_t per = std::max<int64_t>(1, (int64_t(1) << 20) / plan[i].cols);
        for (int64_t r = 0; r < plan[i].rows; r += per) chunks.push_back({i, r, std::min(per, plan[i].rows - r)});
    }
    std::vector<uint64_t> offsets(plan.size());
    for (size_t i = 0; i < plan.size(); ++i) offsets[i] = header.size() + w.data_offset(i);

    const int threads = num_threads > 0 ? num_threads : int(std::max(1u, std::thread::hardware_concurrency()));
    log::info("generating synthetic model", {{"model", spec.canonical()},
                                             {"parameters_b", double(p.num_parameters()) / 1e9},
                                             {"image_gib", double(total) / double(1 << 30)},
                                             {"threads", threads}});
    const double t0 = now_ms();
    ThreadPool pool(threads);
    ProgressBar bar("synthetic " + p.name + " " + ggml_type_name(spec.weight_type), int64_t(chunks.size()));
    std::atomic<int64_t> done{0};
    std::atomic<bool> failed{false};
    const std::thread::id caller = std::this_thread::get_id();
    pool.parallel_for(int64_t(chunks.size()), [&](int64_t c) {
        const Chunk& ch = chunks[size_t(c)];
        const TensorPlan& t = plan[ch.tensor];
        const GgmlType type = t.matrix ? spec.weight_type : GgmlType::kF32;
        std::vector<float> values(size_t(ch.rows * t.cols));
        fill_uniform(mix(name_seed(spec.seed, t.name) ^ uint64_t(ch.row0)), t.mean, t.sigma, values.data(),
                     int64_t(values.size()));
        auto bytes = quantize(type, values.data(), int64_t(values.size()));
        if (!bytes.ok()) {
            failed = true;
            return;
        }
        const uint64_t row_bytes = ggml_row_size(type, t.cols);
        std::memcpy(file.data() + offsets[ch.tensor] + uint64_t(ch.row0) * row_bytes, bytes.value().data(),
                    bytes.value().size());
        const int64_t n = ++done;
        if (std::this_thread::get_id() == caller) bar.update(n);
    });
    bar.finish();
    if (failed)
        return internal_error("synthetic model: quantizing to " + std::string(ggml_type_name(spec.weight_type)) +
                              " failed");
    const int fd = file.release();
    log::info("synthetic model ready", {{"model", spec.canonical()}, {"seconds", (now_ms() - t0) / 1000.0}});
    return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace

int64_t SyntheticPreset::num_parameters() const {
    const int64_t q_dim = int64_t(head_dim) * num_heads, kv_dim = int64_t(head_dim) * num_kv_heads;
    const int64_t per_layer = int64_t(hidden) * (q_dim + 2 * kv_dim) + q_dim * hidden + 3 * int64_t(hidden) * ffn;
    return per_layer * num_layers + int64_t(vocab_size) * hidden * (tied_embeddings ? 1 : 2);
}

const std::vector<SyntheticPreset>& synthetic_presets() {
    static const std::vector<SyntheticPreset> presets = {
        // Head 128 as issue 14 specifies (Llama-3.2-1B itself has 64: 32 heads x 64 = 2048).
        {"llama-1b", "Llama-3.2-1B", "llama", 16, 2048, 32, 8, 128, 8192, 128256, 131072, 500000.0f, true},
        {"llama-8b", "Llama-3.1-8B", "llama", 32, 4096, 32, 8, 128, 14336, 128256, 131072, 500000.0f, false},
        {"qwen-7b", "Qwen2-7B", "qwen2", 28, 3584, 28, 4, 128, 18944, 152064, 32768, 1000000.0f, false},
        // For tests: two layers, a vocabulary a little past SmolLM2's 49152 (so <oov_N> ids exist).
        {"tiny", "a test model", "llama", 2, 256, 4, 2, 64, 512, 49408, 4096, 10000.0f, false},
    };
    return presets;
}

std::string SyntheticSpec::canonical() const {
    return std::string(kSyntheticPrefix) + preset.name + ":" + ggml_type_name(weight_type) +
           ":seed=" + std::to_string(seed);
}

Expected<SyntheticSpec> parse_synthetic_spec(std::string_view model) {
    if (!is_synthetic_model(model)) return invalid_argument("not a synthetic model: '" + std::string(model) + "'");
    std::vector<std::string> parts;
    std::string_view rest = model.substr(kSyntheticPrefix.size());
    for (;;) {
        const size_t colon = rest.find(':');
        parts.emplace_back(rest.substr(0, colon));
        if (colon == std::string_view::npos) break;
        rest = rest.substr(colon + 1);
    }
    SyntheticSpec spec;
    const std::string name = lower(parts[0]);
    const auto& presets = synthetic_presets();
    const auto it = std::find_if(presets.begin(), presets.end(), [&](const auto& p) { return p.name == name; });
    if (it == presets.end()) {
        return invalid_argument("unknown synthetic model '" + parts[0] + "' (known: " + preset_list() + ")");
    }
    spec.preset = *it;
    bool have_type = false;
    for (size_t i = 1; i < parts.size(); ++i) {
        const std::string part = lower(parts[i]);
        if (part.rfind("seed=", 0) == 0) {
            const std::string digits = part.substr(5);
            if (digits.empty() || digits.size() > 19 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) {
                return invalid_argument("synthetic model seed must be a number: '" + parts[i] + "'");
            }
            spec.seed = std::stoull(digits);
            continue;
        }
        const auto t = std::find_if(std::begin(kWeightTypes), std::end(kWeightTypes),
                                    [&](GgmlType x) { return lower(ggml_type_name(x)) == part; });
        if (have_type || t == std::end(kWeightTypes)) {
            return invalid_argument("synthetic model option '" + parts[i] + "' is neither a weight type (" +
                                    type_list() + ") nor seed=N");
        }
        spec.weight_type = *t;
        have_type = true;
    }
    const int64_t block = ggml_type_traits(spec.weight_type).block_size;
    const SyntheticPreset& p = spec.preset;
    if (p.hidden % block != 0 || p.ffn % block != 0 || (int64_t(p.head_dim) * p.num_heads) % block != 0) {
        return invalid_argument(std::string("synthetic ") + p.name + ": rows are not whole " +
                                ggml_type_name(spec.weight_type) + " blocks");
    }
    return spec;
}

Expected<std::string> materialize_synthetic_model(const SyntheticSpec& spec, const GgufFile& tokenizer_source,
                                                  int num_threads) {
    static std::mutex mu;
    static std::map<std::string, std::string>* built = new std::map<std::string, std::string>();  // never freed
    const std::lock_guard<std::mutex> lock(mu);
    const std::string key = spec.canonical();
    if (auto it = built->find(key); it != built->end()) return it->second;
    LA_ASSIGN_OR_RETURN(std::string path, build_image(spec, tokenizer_source, num_threads));
    (*built)[key] = path;
    return path;
}

Expected<std::string> resolve_model_source(const std::string& model, const std::string& tokenizer_path,
                                           int num_threads) {
    if (!is_synthetic_model(model)) return model;
    LA_ASSIGN_OR_RETURN(const SyntheticSpec spec, parse_synthetic_spec(model));
    if (tokenizer_path.empty()) {
        return not_found(
            "synthetic models take their tokenizer from the embedded SmolLM2 model, which was not found "
            "(run `make run` once, or set LAZYATTN_MODEL to a GGUF with a byte-level BPE tokenizer)");
    }
    LA_ASSIGN_OR_RETURN(auto tokenizer_file, GgufFile::open(tokenizer_path));
    return materialize_synthetic_model(spec, *tokenizer_file, num_threads);
}

Status write_vocabulary_gguf(const GgufFile& source, const std::string& path) {
    LA_ASSIGN_OR_RETURN(std::vector<std::string> tokens, source.get_string_array("tokenizer.ggml.tokens"));
    GgufWriter w;
    LA_ASSIGN_OR_RETURN(std::string arch, source.get_string("general.architecture"));
    w.add_string("general.architecture", arch);
    w.add_string("general.name", "vocabulary only");
    LA_RETURN_IF_ERROR(add_tokenizer(w, source, int32_t(tokens.size())));
    return w.write(path);
}

}  // namespace lazyattn::synthetic
