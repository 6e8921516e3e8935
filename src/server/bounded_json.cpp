#include "server/bounded_json.h"

#include <vector>

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

// Costs of nlohmann::json's pieces on 64-bit glibc, malloc's 16-byte header and rounding
// included: every value is a 16-byte slot (in its parent's vector or map node, vectors growing
// by up to 2x); an object a heap std::map; a member a map node holding its key; a string or an
// array a heap std::string or std::vector.
constexpr int64_t kSlotBytes = 32;
constexpr int64_t kObjectBytes = 64;
constexpr int64_t kMemberBytes = 96;
constexpr int64_t kStringBytes = 48;
constexpr int64_t kArrayBytes = 48;

// Heap bytes of a std::string's characters beyond its inline buffer.
int64_t text_bytes(size_t n) { return n < 16 ? 0 : int64_t(n) + 1 + 16; }

struct TooCostly {
    std::string message;
};

// One open object or array while parsing: its key in the parent and, for a list, its length.
struct Frame {
    bool is_array = false;
    std::string key;  // the member name the container is the value of ("" at the top or in a list)
    int64_t items = 0;
};

class CostCounter {
public:
    CostCounter(size_t body_bytes, const JsonBounds& bounds)
        : limit_(bounds.max_cost_bytes > 0
                     ? bounds.max_cost_bytes
                     : JsonBounds::kFloorBytes + JsonBounds::kBytesPerBodyByte * int64_t(body_bytes)),
          bounds_(bounds) {}

    bool on_event(json::parse_event_t event, const json& parsed) {
        switch (event) {
            case json::parse_event_t::object_start:
                open(false, kObjectBytes);
                break;
            case json::parse_event_t::array_start:
                open(true, kArrayBytes);
                break;
            case json::parse_event_t::key:
                pending_key_ = parsed.get_ref<const std::string&>();
                add(kMemberBytes + text_bytes(pending_key_.size()));
                break;
            case json::parse_event_t::value:
                add(kSlotBytes +
                    (parsed.is_string() ? kStringBytes + text_bytes(parsed.get_ref<const std::string&>().size()) : 0));
                count_item();
                break;
            case json::parse_event_t::object_end:
            case json::parse_event_t::array_end:
                stack_.pop_back();
                count_item();
                break;
        }
        return true;
    }

private:
    void open(bool is_array, int64_t bytes) {
        add(kSlotBytes + bytes);
        stack_.push_back({is_array, stack_.empty() || stack_.back().is_array ? std::string() : pending_key_, 0});
    }
    // A value completed: one more item of the list it sits in.
    void count_item() {
        if (stack_.empty() || !stack_.back().is_array) return;
        Frame& list = stack_.back();
        if (++list.items > bounds_.max_list_items && bounds_.max_list_items > 0 &&
            (list.key == "content" || list.key == "documents")) {
            throw TooCostly{"a '" + list.key + "' list holds more than " + std::to_string(bounds_.max_list_items) +
                            " items (--max-documents documents per request, and the question part)"};
        }
    }
    void add(int64_t bytes) {
        cost_ += bytes;
        if (cost_ > limit_) {
            throw TooCostly{"the JSON body's values would take more than " + std::to_string(limit_ >> 10) +
                            " KiB parsed (" + std::to_string(JsonBounds::kBytesPerBodyByte) +
                            "x its size + 1 MiB): too many small objects, strings or list items"};
        }
    }

    const int64_t limit_;
    const JsonBounds bounds_;
    int64_t cost_ = 0;
    std::string pending_key_;
    std::vector<Frame> stack_;
};

}  // namespace

Expected<json> parse_bounded_json(std::string_view text, const JsonBounds& bounds) {
    CostCounter counter(text.size(), bounds);
    try {
        return json::parse(
            text, [&counter](int, json::parse_event_t event, json& parsed) { return counter.on_event(event, parsed); });
    } catch (const TooCostly& e) {
        return invalid_argument(e.message);
    } catch (const json::exception& e) {  // parse_error, and out_of_range for 1e999
        return invalid_argument(std::string("malformed JSON: ") + e.what());
    }
}

int64_t estimated_json_bytes(const json& value) {
    int64_t bytes = kSlotBytes;
    if (value.is_string()) return bytes + kStringBytes + text_bytes(value.get_ref<const std::string&>().size());
    if (value.is_object()) {
        bytes += kObjectBytes;
        for (const auto& [key, member] : value.items()) {
            bytes += kMemberBytes + text_bytes(key.size()) + estimated_json_bytes(member);
        }
        return bytes;
    }
    if (value.is_array()) {
        bytes += kArrayBytes;
        for (const json& item : value) bytes += estimated_json_bytes(item);
    }
    return bytes;
}

}  // namespace lazyattn::server
