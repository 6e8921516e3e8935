#include "cli/help_format.h"

#include <algorithm>
#include <sstream>

#include "core/cpu_features.h"

#ifndef LAZYATTN_VERSION
#define LAZYATTN_VERSION "unknown"
#endif

namespace lazyattn::cli {

// Defined in the build-info file the build regenerates when HEAD moves (src/cli/build_info.cmake).
extern const char* const kGitCommit;
extern const char* const kBuildType;

namespace {

// "{a,b,c}" (CLI::IsMember's description) as "a|b|c".
std::string choices(const std::string& set) {
    std::string out = set.substr(1, set.size() - 2);
    std::replace(out.begin(), out.end(), ',', '|');
    return out;
}

// "INT in [1 - 65535]" (CLI::Range's description) as "[1, 65535]" when both ends are short; the
// ranges that only say "positive" up to INT32_MAX are left to the description.
std::string short_range(const std::string& check) {
    const size_t open = check.find(" in ["), dash = check.find(" - "), close = check.rfind(']');
    if (open == std::string::npos || dash == std::string::npos || close == std::string::npos) return "";
    const std::string lo = check.substr(open + 5, dash - open - 5), hi = check.substr(dash + 3, close - dash - 3);
    if (hi.size() > 6) return "";
    return " [" + lo + ", " + hi + "]";
}

size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = up;
        }
    }
    return row[b.size()];
}

// The deepest subcommand the parse entered (the app itself when none).
CLI::App* deepest_parsed(CLI::App* app) {
    for (CLI::App* sub : app->get_subcommands([](CLI::App* s) { return s->parsed(); })) return deepest_parsed(sub);
    return app;
}

std::vector<std::string> names_of(CLI::App* app) {
    std::vector<std::string> names;
    for (const CLI::Option* opt : app->get_options()) {
        for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
        for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    }
    for (const CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
    return names;
}

}  // namespace

std::string HelpFormatter::make_option_name(const CLI::Option* opt, bool is_positional) const {
    std::string name = CLI::Formatter::make_option_name(opt, is_positional);
    for (size_t open = name.find('{'); open != std::string::npos; open = name.find('{')) {
        name.erase(open, name.find('}', open) - open + 1);
    }
    return name;
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
    std::ostringstream out;
    if (opt->get_type_size() != 0) {
        const std::string full = opt->get_type_name();
        const size_t colon = full.find(':');
        std::string type = full.substr(0, colon);
        if (colon != std::string::npos) {
            const std::string check = full.substr(colon + 1);
            if (check.size() > 1 && check.front() == '{' && type == "TEXT") {
                type = choices(check);
            } else if (type.find('|') == std::string::npos) {
                type += short_range(check);
            }
        }
        if (type == "TEXT" || type == "TEXT:FILE") type = "TEXT";
        if (!type.empty()) out << " " << type;
        if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out << " ...";
        if (opt->get_required()) out << " (required)";
    }
    if (!opt->get_envname().empty()) out << " (env " << opt->get_envname() << ")";
    return out.str();
}

std::string HelpFormatter::make_option_desc(const CLI::Option* opt) const {
    std::string desc = opt->get_description();
    std::string def = opt->get_default_str();
    if (opt->get_type_size() == 0 || def.empty() || desc.find("default") != std::string::npos) return desc;
    if (def.size() > 1 && def.front() == '[' && def.back() == ']') def = def.substr(1, def.size() - 2);
    if (def.empty()) return desc;
    return desc + " (default: " + def + ")";
}

void capture_defaults(CLI::App& app) {
    for (CLI::Option* opt : app.get_options()) {
        if (opt->get_type_size() != 0 && opt->get_default_str().empty()) opt->capture_default_str();
    }
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) capture_defaults(*sub);
}

std::string did_you_mean(CLI::App& app) {
    CLI::App* node = deepest_parsed(&app);
    const std::vector<std::string> candidates = names_of(node);
    std::string out;
    for (const std::string& arg : node->remaining()) {
        const std::string typed = arg.substr(0, arg.find('='));
        // Options are suggested for what looks like an option, commands for a bare word.
        const bool option = typed.size() > 1 && typed[0] == '-';
        const std::string* best = nullptr;
        size_t best_distance = std::max<size_t>(2, typed.size() / 3) + 1;
        for (const std::string& c : candidates) {
            if ((c[0] == '-') != option) continue;
            const size_t d = edit_distance(typed, c);
            if (d < best_distance) best = &c, best_distance = d;
        }
        if (best != nullptr) out += "did you mean " + *best + " (for " + typed + ")?\n";
    }
    return out;
}

std::string system_fingerprint() {
    const std::string commit = kGitCommit;
    const bool known = !commit.empty() && commit.find(' ') != 0 && commit.rfind("unknown", 0) != 0;
    return std::string("b") + LAZYATTN_VERSION + (known ? "-" + commit.substr(0, commit.find(' ')) : "");
}

std::string version_text(bool cuda_built) {
    std::ostringstream out;
    out << "lazyattn " << LAZYATTN_VERSION << "\n";
    out << "git commit: " << kGitCommit << "\n";
    out << "build type: " << kBuildType << "\n";
    out << "CPU ISA: " << cpu_isa_name(cpu_features().widest()) << " (probed "
        << cpu_isa_name(probe_cpu_features().widest()) << ", LAZYATTN_CPU_ISA limits it)\n";
    out << "CUDA: " << (cuda_built ? "on (--device cuda)" : "off (this build computes on the CPU)") << "\n";
    return out.str();
}

}  // namespace lazyattn::cli
