// The tables and JSON of `lazyattn bench quality` (bench_quality_report.h).
#include "cli/bench_quality_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "bench/heldout_tasks.h"
#include "bench/proportions.h"

namespace lazyattn::cli {
namespace {

// Where the answer's document sits among k: first, middle third.., last.
std::string position_bucket(const bench::QualityTask& t) {
    if (t.answer_doc < 0) return "";
    if (t.answer_doc == 0) return "first";
    if (t.answer_doc == t.num_docs - 1) return "last";
    const double x = double(t.answer_doc) / double(t.num_docs - 1);
    return x < 1.0 / 3 ? "early" : x < 2.0 / 3 ? "middle" : "late";
}

std::string pct(double x) {
    char b[16];
    std::snprintf(b, sizeof b, "%.1f", 100 * x);
    return b;
}

std::string accuracy_cell(const std::vector<bool>& c) {
    const int64_t hits = std::count(c.begin(), c.end(), true);
    const auto ci = bench::wilson_interval(hits, int64_t(c.size()));
    return pct(double(hits) / std::max<size_t>(1, c.size())) + " [" + pct(ci.low) + ", " + pct(ci.high) + "]";
}

// One paired comparison (McNemar) of `variant` against `reference` as the JSON report holds it.
nlohmann::json paired_json(const std::string& variant, const std::string& reference, const bench::PairedComparison& c) {
    return {{"variant", variant},         {"reference", reference},
            {"difference", c.difference}, {"ci", {c.difference_ci.low, c.difference_ci.high}},
            {"p_value", c.p_value},       {"only_variant", c.only_a},
            {"only_reference", c.only_b}};
}

bool every_task(const bench::QualityTask&) { return true; }

// Groups: every question, each family (and the held-out ones together), each k, each answer
// position.
void add_groups(const BenchQualityOptions& o, const bench::QualitySuiteOptions& so, QualityResults& r) {
    r.groups.push_back({"all", every_task});
    r.families = so.families;
    if (o.wiki) r.families.push_back("2wiki");
    for (const auto& f : r.families)
        r.groups.push_back({f, [f](const bench::QualityTask& t) { return t.family == f; }});
    if (std::count_if(so.families.begin(), so.families.end(), bench::is_heldout_family) > 1) {
        r.families.push_back("heldout");
        r.groups.push_back({"heldout", [](const bench::QualityTask& t) { return bench::is_heldout_family(t.family); }});
    }
    for (int32_t k : o.doc_counts) {
        r.groups.push_back({"k=" + std::to_string(k),
                            [k](const bench::QualityTask& t) { return t.family != "2wiki" && t.num_docs == k; }});
    }
    for (const char* pos : {"first", "early", "middle", "late", "last"}) {
        const std::string p = pos;
        r.groups.push_back({"answer " + p, [p](const bench::QualityTask& t) { return position_bucket(t) == p; }});
    }
}

void report_accuracy(const QualityResults& r, nlohmann::json& out) {
    std::printf("\naccuracy %% [95%% Wilson interval]\n%-14s", "group");
    for (const auto& v : r.variants) std::printf(" %-24s", v.name.c_str());
    std::printf(" %6s\n", "n");
    for (const auto& [name, keep] : r.groups) {
        const size_t n = r.correct_where(r.variants[0].name, keep).size();
        if (n == 0) continue;
        std::printf("%-14s", name.c_str());
        for (const auto& v : r.variants) {
            const auto c = r.correct_where(v.name, keep);
            std::printf(" %-24s", accuracy_cell(c).c_str());
            const int64_t hits = std::count(c.begin(), c.end(), true);
            const auto ci = bench::wilson_interval(hits, int64_t(n));
            out["accuracy"][name][v.name] = {
                {"n", n}, {"correct", hits}, {"accuracy", double(hits) / double(n)}, {"ci", {ci.low, ci.high}}};
        }
        std::printf(" %6zu\n", n);
    }
}

void report_paired(const QualityResults& r, nlohmann::json& out) {
    // Paired comparisons against the references present: the first variant and `lazy`.
    std::vector<std::string> refs{r.variants[0].name};
    if (r.answers.count("lazy") && r.variants[0].name != "lazy") refs.push_back("lazy");
    std::printf("\npaired, every question: difference in points [95%% interval], McNemar p\n");
    for (const auto& ref : refs) {
        for (const auto& v : r.variants) {
            if (v.name == ref) continue;
            const auto c = bench::compare_paired(r.correct_where(v.name, every_task), r.correct_where(ref, every_task));
            std::printf("%-24s vs %-12s %+6.1f [%+.1f, %+.1f]  p = %.3g  (%lld only here, %lld only there)\n",
                        v.name.c_str(), ref.c_str(), 100 * c.difference, 100 * c.difference_ci.low,
                        100 * c.difference_ci.high, c.p_value, (long long)c.only_a, (long long)c.only_b);
            out["paired"].push_back(paired_json(v.name, ref, c));
        }
    }
    // The same per family.
    if (r.families.size() > 1) std::printf("\npaired, per family\n");
    for (const auto& [name, keep] : r.groups) {
        if (std::find(r.families.begin(), r.families.end(), name) == r.families.end()) continue;
        for (const auto& ref : refs) {
            for (const auto& v : r.variants) {
                if (v.name == ref) continue;
                const auto c = bench::compare_paired(r.correct_where(v.name, keep), r.correct_where(ref, keep));
                if (r.families.size() > 1) {
                    std::printf("%-8s %-24s vs %-12s %+6.1f [%+.1f, %+.1f]  p = %.3g  (%lld / %lld)\n", name.c_str(),
                                v.name.c_str(), ref.c_str(), 100 * c.difference, 100 * c.difference_ci.low,
                                100 * c.difference_ci.high, c.p_value, (long long)c.only_a, (long long)c.only_b);
                }
                out["paired_by_group"][name].push_back(paired_json(v.name, ref, c));
            }
        }
    }
}

void report_gap(const QualityResults& r, nlohmann::json& out) {
    // Share of the lazy -> none gap each variant recovers.
    if (r.answers.count("none") && r.answers.count("lazy")) {
        auto acc = [&](const std::string& v) {
            const auto c = r.correct_where(v, every_task);
            return double(std::count(c.begin(), c.end(), true)) / double(c.size());
        };
        const double gap = acc("none") - acc("lazy");
        std::printf("\ngap none - lazy: %.1f points\n", 100 * gap);
        for (const auto& v : r.variants) {
            if (v.name == "none" || v.name == "lazy" || gap <= 0) continue;
            std::printf("%-24s recovers %.0f%% of it\n", v.name.c_str(), 100 * (acc(v.name) - acc("lazy")) / gap);
            out["gap_recovered"][v.name] = (acc(v.name) - acc("lazy")) / gap;
        }
    }
}

void report_cost(const QualityResults& r, double seconds, nlohmann::json& out) {
    // Variants sharing a document encoding share its computation here (whoever asked first is
    // charged), so prefill per variant is not comparable; recomputed rows are per variant.
    std::printf("\n%-24s %12s %16s   (all variants: %.0f s)\n", "variant", "prompt tok", "recomputed tok", seconds);
    for (const auto& v : r.variants) {
        int64_t prompt = 0, recomputed = 0;
        double f1 = 0;
        for (const auto& a : r.answers.at(v.name))
            prompt += a.prompt_tokens, recomputed += a.recomputed_tokens, f1 += a.f1;
        std::printf("%-24s %12lld %16lld\n", v.name.c_str(), (long long)prompt, (long long)recomputed);
        out["cost"][v.name] = {{"prompt_tokens", prompt}, {"recomputed_tokens", recomputed}};
        // SQuAD token F1, the 2Wiki convention (verbose replies keep it low).
        out["mean_f1"][v.name] = f1 / double(std::max<size_t>(1, r.tasks.size()));
    }
}

void report_questions(const QualityResults& r, nlohmann::json& out) {
    for (size_t i = 0; i < r.tasks.size(); ++i) {
        const auto& t = r.tasks[i];
        nlohmann::json q = {{"family", t.family},
                            {"k", t.num_docs},
                            {"answer_doc", t.answer_doc},
                            {"depth", t.depth},
                            {"position", position_bucket(t)},
                            {"chance", t.chance},
                            {"question", t.question},
                            {"answers", t.answers}};
        for (const auto& v : r.variants) {
            q["replies"][v.name] = r.answers.at(v.name)[i].reply;
            q["correct"][v.name] = r.answers.at(v.name)[i].correct;
            q["names_all"][v.name] = bench::reply_names_all(t, r.answers.at(v.name)[i].reply);
        }
        out["questions"].push_back(std::move(q));
    }
}

}  // namespace

void keep_answered_by_all(QualityResults& r, const QualityProgress& progress, nlohmann::json& out) {
    std::vector<size_t> keep;
    std::map<std::string, size_t> answered;
    std::vector<bool> by_all(r.tasks.size(), true);
    for (const auto& v : r.variants) {
        for (size_t i = 0; i < r.tasks.size(); ++i) {
            const bool has = progress.find(v.name, i) != nullptr;
            answered[v.name] += has;
            if (!has) by_all[i] = false;
        }
    }
    for (size_t i = 0; i < r.tasks.size(); ++i) {
        if (by_all[i]) keep.push_back(i);
    }
    std::printf("answered, of %zu questions:", r.tasks.size());
    for (const auto& v : r.variants) {
        std::printf(" %s %zu", v.name.c_str(), answered[v.name]);
        out["answered"][v.name] = answered[v.name];
    }
    std::printf("; the tables count the %zu every variant has answered%s\n", keep.size(),
                keep.size() < r.tasks.size() ? " (partial)" : "");
    out["partial"] = keep.size() < r.tasks.size();
    out["num_questions_asked"] = r.tasks.size();
    std::vector<bench::QualityTask> tasks;
    std::map<std::string, std::vector<QualityAnswer>> answers;
    for (size_t i : keep) {
        tasks.push_back(r.tasks[i]);
        for (const auto& v : r.variants) answers[v.name].push_back(r.answers[v.name][i]);
    }
    r.tasks = std::move(tasks);
    r.answers = std::move(answers);
}

void write_report(const BenchQualityOptions& o, const bench::QualitySuiteOptions& so, const std::string& path,
                  double seconds, QualityResults& r, nlohmann::json& out) {
    add_groups(o, so, r);
    out["model"] = path;
    out["weights"] = o.fp32 ? "fp32" : "as stored in the file";
    out["seed"] = o.seed;
    out["neighbours_corpus"] = o.neighbours_corpus;
    out["num_questions"] = r.tasks.size();
    for (const auto& v : r.variants) out["variants"].push_back(v.name);  // in the order run (objects sort keys)
    if (r.tasks.empty()) {
        std::printf("no question answered by every variant yet\n");
    } else {
        report_accuracy(r, out);
        report_paired(r, out);
        report_gap(r, out);
        report_cost(r, seconds, out);
    }
    out["seconds"] = seconds;
    report_questions(r, out);
    if (!o.json_path.empty()) std::ofstream(o.json_path) << out.dump(1);
}

}  // namespace lazyattn::cli
