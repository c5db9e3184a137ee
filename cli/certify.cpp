// `moacert certify` and `moacert reproduce`.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/core.h>
#include <fmt/format.h>

#include "cli/budget.hpp"
#include "cli/certificate_files.hpp"
#include "cli/certify_budget.hpp"
#include "cli/commands.hpp"
#include "cli/numbers.hpp"
#include "cli/ranks.hpp"
#include "cli/shape.hpp"
#include "cli/shared_certify.hpp"
#include "files/atomic_write.hpp"
#include "kernels/plugin/plugin.hpp"
#include "kernels/worker/worker.hpp"
#include "oracle/case_json.hpp"
#include "properties/certify.hpp"
#include "properties/parallel_cases.hpp"
#include "properties/properties.hpp"
#include "reference/arithmetic_spec.hpp"
#include "reports/certificate.hpp"
#include "reports/html.hpp"
#include "reports/junit.hpp"

namespace moacert::cli {

namespace fs = std::filesystem;

namespace {

// Progress on stderr: a bar on a terminal, a line every few seconds
// otherwise.
class Progress {
 public:
  explicit Progress(std::string what) : what_(std::move(what)), tty_(isatty(STDERR_FILENO) != 0) {}
  void operator()(int done, int total, const char* phase) {
    const auto now = std::chrono::steady_clock::now();
    if (tty_) {
      const int width = 30, filled = total ? done * width / total : width;
      fmt::print(stderr, "\r{} [{}{}] {}/{} {}   ", what_, std::string(std::size_t(filled), '#'),
                 std::string(std::size_t(width - filled), '.'), done, total, phase);
      if (done == total) fmt::print(stderr, "\n");
    } else if (now - last_ >= std::chrono::seconds(5) || done == total) {
      fmt::print(stderr, "{}: {}/{} cases ({})\n", what_, done, total, phase);
      last_ = now;
    }
  }
  ~Progress() {
    if (tty_) fmt::print(stderr, "\n");
  }

 private:
  std::string what_;
  bool tty_;
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

struct CertifyArgs {
  std::string op;
  std::string variant;
  std::string dtype;
  int cases = 200;
  std::string seed;  // empty: from the clock
  std::string rule = "apriori";
  std::string out = "moacert-out";
  std::string plugin;                   // LIB.so[#NAME]
  std::string worker;                   // CMD ARGS (docs/worker-protocol.md)
  double timeout = 60;                  // seconds per plugin or worker call
  std::string max_memory;               // bytes, "4G"; empty: half the RAM
  std::vector<std::string> case_files;  // --case: judge these instead of generated cases
  std::string junit;                    // --junit FILE: JUnit XML for CI dashboards
  std::string shape;                    // --shape N=4096,M=1..8192: constraints on the extents
  std::string arithmetic_at_most;       // --arithmetic-at-most SPEC (docs/design.md#arithmetic)
  int jobs = 1;                         // --jobs J: cases judged at once
  int threads = 0;                      // --threads N: each kernel call's (0: its own choice)
};

std::uint64_t max_memory_of(const std::string& text) {
  return text.empty() ? default_max_memory() : parse_bytes(text);
}

// The variant of `--plugin LIB.so[#NAME]` (its worker ends with it), given
// without --variant, a kernel of `op`; `op_words` ends the message when it
// is not ("not attention.fwd").
kernels::Variant load_plugin(const std::string& spec, const std::string& variant, double timeout,
                             Op op, const std::string& op_words,
                             const std::string& default_name = {}) {
  if (!variant.empty()) throw UsageError("give --variant or --plugin, not both");
  kernels::plugin::LoadOptions o;
  o.timeout_s = timeout;
  kernels::Variant v = kernels::plugin::load(spec, o, default_name);
  if (v.op != op) {
    throw UsageError("plugin kernel " + v.name + " is a kernel of " + std::string(info(v.op).name) +
                     ", " + op_words);
  }
  return v;
}

// The variant of `--worker "CMD"` (its process ends with it): the
// worker's kernel of `op`, `variant` (--variant NAME) among several, else
// `default_name` (a token's).
kernels::Variant load_worker(const std::string& command, const std::string& plugin,
                             const std::string& variant, double timeout, Op op,
                             const std::string& default_name = {}) {
  if (!plugin.empty()) throw UsageError("give --plugin or --worker, not both");
  kernels::worker::LoadOptions o;
  o.timeout_s = timeout;
  return kernels::worker::load(command, op, variant, o, default_name);
}

// The output folders certify created before its work: removed again (those
// still empty, the deepest first) when the run stops without writing its
// files (a case the device cannot hold, an internal error), so that
// nothing is left half-way; kept once the files are written.
class CreatedFolders {
 public:
  ~CreatedFolders() {
    std::error_code ec;
    for (auto it = folders_.rbegin(); it != folders_.rend(); ++it) fs::remove(*it, ec);
  }
  void add(const fs::path& dir) {
    // each folder of dir's path that does not exist yet, outermost first
    std::vector<fs::path> missing;
    for (fs::path d = fs::absolute(dir); !d.empty() && !fs::exists(d); d = d.parent_path())
      missing.insert(missing.begin(), d);
    folders_.insert(folders_.end(), missing.begin(), missing.end());
  }
  void keep() { folders_.clear(); }

 private:
  std::vector<fs::path> folders_;
};

// Checks that `dir` can be created and written, before any work is done,
// so that nothing is left half-way.
void require_writable(const fs::path& dir, CreatedFolders& created) {
  std::error_code ec;
  created.add(dir);
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw UsageError("cannot create output folder " + dir.string());
  const fs::path probe = dir / ".moacert-write-test";
  {
    std::ofstream f(probe);
    if (!f) throw UsageError("cannot write into output folder " + dir.string());
  }
  fs::remove(probe, ec);
}

// The variants certify runs: --worker's or --plugin's (loaded into
// `plugin`), --variant's, or every variant of the op.
std::vector<const kernels::Variant*> chosen_variants(const CertifyArgs& a, Op op,
                                                     std::optional<kernels::Variant>& plugin) {
  if (!a.worker.empty()) {
    plugin = load_worker(a.worker, a.plugin, a.variant, a.timeout, op);
    return {&*plugin};
  }
  if (!a.plugin.empty()) {
    plugin = load_plugin(a.plugin, a.variant, a.timeout, op, "not " + a.op);
    return {&*plugin};
  }
  const auto& registry = kernels::Registry::builtin();
  if (!a.variant.empty()) {
    const kernels::Variant* v = registry.find(op, a.variant);
    if (!v)
      throw UsageError("no variant '" + a.variant + "' of " + a.op +
                       " in this build (moacert list)");
    return {v};
  }
  std::vector<const kernels::Variant*> all = registry.of(op);
  if (all.empty()) throw UsageError("no variant of " + a.op + " in this build");
  return all;
}

// certify's arguments but the variants, parsed and checked: what each
// variant's certification runs with.
struct CertifySettings {
  Op op;
  std::optional<Format> format;  // --dtype's, or the case files'
  std::vector<std::pair<std::string, Case>> case_files;
  properties::ShapeConstraints shape;
  properties::Rule rule;
  std::uint64_t seed = 0;
  int cases = 0;
  std::uint64_t max_memory = 0;  // --max-memory's bytes
  int jobs = 1;
  int threads = 0;  // --threads: handed to every kernel call
  std::optional<Arithmetic> arithmetic_at_most;
  std::string arithmetic_at_most_text;

  // --dtype's format, else f32 where the variant has it, else its first.
  Format format_of(const kernels::Variant& v) const {
    return format.value_or(v.supports(Format::f32) ? Format::f32 : v.formats.front());
  }
  properties::CertifyOptions options_for(const kernels::Variant& v) const {
    properties::CertifyOptions o;
    o.variant = &v;
    o.format = format_of(v);
    o.cases = cases;
    o.seed = seed;
    o.rule = rule;
    o.shape = shape;
    o.arithmetic_at_most = arithmetic_at_most;
    o.arithmetic_at_most_text = arithmetic_at_most_text;
    // The same decision as the budget's check before the run (torch_beside).
    o.equivalence_fits = [o, max = max_memory](const Case& c) {
      return torch_beside(o, c.problem, layouts_of(c), max) != nullptr;
    };
    o.fits = [o, max = max_memory](const properties::CaseSpec& spec) {
      return case_fits(o, spec, max);
    };
    o.jobs = jobs;
    o.threads = threads;
    if (properties::jobs_for(v, jobs) > 1)  // each job's share of the budget
      o.fits_beside = [o, max = max_memory / std::uint64_t(jobs)](
                          const properties::CaseSpec& spec) { return case_fits(o, spec, max); };
    return o;
  }
};

// Case files fix the op and the format: each must be a case of `op`, all in
// one format (that of --dtype, when given), which `format` becomes.
std::vector<std::pair<std::string, Case>> read_case_files(const CertifyArgs& a, Op op,
                                                          std::optional<Format>& format) {
  std::vector<std::pair<std::string, Case>> case_files;
  for (const std::string& path : a.case_files) {
    Case c = oracle::read_case_file(path);
    if (c.problem.op != op)
      throw UsageError("--case " + path + " is a case of " + std::string(info(c.problem.op).name) +
                       ", not " + a.op);
    if (format && c.problem.format != *format)
      throw UsageError("--case " + path + " is in " + std::string(name(c.problem.format)) +
                       ", not " + std::string(name(*format)));
    format = c.problem.format;
    case_files.emplace_back(path, std::move(c));
  }
  return case_files;
}

CertifySettings certify_settings(const CertifyArgs& a, Op op) {
  CertifySettings s;
  s.op = op;
  if (!a.dtype.empty()) {
    s.format = parse_format(a.dtype);
    if (!s.format) throw UsageError("unknown dtype '" + a.dtype + "' (f64, f32, bf16, f16)");
  }
  s.case_files = read_case_files(a, op, s.format);
  if (a.cases < 1) throw UsageError("--cases must be at least 1, got " + std::to_string(a.cases));
  s.cases = a.cases;
  if (a.jobs < 1) throw UsageError("--jobs must be at least 1, got " + std::to_string(a.jobs));
  s.jobs = a.jobs;
  check_threads(a.threads, "certify");
  s.threads = a.threads;
  s.max_memory = max_memory_of(a.max_memory);
  if (!a.shape.empty() && !s.case_files.empty())
    throw UsageError("give --shape or --case, not both (a case file fixes its shape)");
  s.shape = parse_shape_constraints(op, a.shape, "certify");
  const std::optional<properties::Rule> rule = properties::parse_rule(a.rule);
  if (!rule) throw UsageError("unknown rule '" + a.rule + "' (apriori, max-ulp=K, vs-torch=R)");
  s.rule = *rule;
  if (!a.arithmetic_at_most.empty()) {
    try {
      s.arithmetic_at_most = parse_arithmetic(a.arithmetic_at_most, op);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--arithmetic-at-most: ") + e.what());
    }
    s.arithmetic_at_most_text = a.arithmetic_at_most;
  }
  s.seed = !a.seed.empty()
               ? parse_seed(a.seed)
               : std::uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  return s;
}

// The first --case file outside v's envelope, as one line naming the
// envelope and why ("" when every file is inside it). A case file outside
// it is bad input, as a --shape outside it is: the kernel never claimed it.
std::string case_outside_envelope(const CertifySettings& s, const kernels::Variant& v) {
  for (const auto& [path, c] : s.case_files)
    if (const std::string why = v.envelope.why_outside(c.problem); !why.empty())
      return v.name + " supports " + v.envelope.str() + " (its envelope); --case " + path +
             " is outside it: " + why;
  return "";
}

// Refuses, before the output folder is created, what a variant cannot
// run: a format it lacks, vs-torch without PyTorch, a --shape past its
// extents, a case past the memory budget. A refused run leaves nothing
// behind.
void refuse_what_cannot_run(const CertifySettings& s, const kernels::Variant& v,
                            std::uint64_t max_memory) {
  const std::string op(info(s.op).name);
  if (const std::string why = kernels::cannot_run(v); !why.empty())
    throw UsageError(v.name + ": " + why);
  const Format f = s.format_of(v);
  if (!v.supports(f))
    throw UsageError("variant " + v.name + " of " + op + " does not support " +
                     std::string(name(f)));
  if (s.rule.kind == properties::Rule::vs_torch && !properties::torch_for(s.op, f)) {
    throw UsageError("rule vs-torch needs PyTorch's variant of " + op + " in " +
                     std::string(name(f)) +
                     (kernels::Registry::builtin().find_role(s.op, kernels::Role::torch)
                          ? ", which the LibTorch adaptor does not run"
                          : ": the LibTorch adaptor is absent from this build"));
  }
  try {
    properties::within_variant(s.shape, v);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (const std::string why = case_outside_envelope(s, v); !why.empty()) throw UsageError(why);
  const properties::CertifyOptions o = s.options_for(v);
  if (s.case_files.empty()) check_certify_budget(o, max_memory);
  for (const auto& [path, c] : s.case_files)
    check_case_budget(c.problem, max_memory, "--case " + path, v, layouts_of(c),
                      torch_beside(o, c.problem, layouts_of(c), max_memory), o.whole_oracle_work);
}

// The root checks that every output can be written (the folder, a folder
// per variant, the JUnit file's folder) and every rank learns its refusal.
void refuse_unwritable_outputs(const CertifyArgs& a,
                               const std::vector<const kernels::Variant*>& variants, Ranks& world,
                               CreatedFolders& created) {
  std::string refusal;
  if (world.root()) {
    try {
      const fs::path out(a.out);
      if (!a.junit.empty() && fs::is_directory(a.junit))
        throw UsageError("--junit " + a.junit + " is a folder");
      require_writable(out, created);
      if (variants.size() > 1)
        for (const kernels::Variant* v : variants) require_writable(out / v->name, created);
      if (!a.junit.empty()) require_writable(fs::absolute(a.junit).parent_path(), created);
    } catch (const UsageError& e) {
      refusal = e.what();
    }
  }
  if (world.share(refusal.empty() ? 0 : 1) != 0) throw UsageError(refusal);  // said by the root
}

// One variant's certification, its cases shared among the ranks
// (cli/shared_certify.hpp); the root shows its progress, the others are
// silent.
SharedCertificate certify_on_ranks(const CertifySettings& s, const kernels::Variant& v,
                                   Ranks& world) {
  properties::CertifyOptions o = s.options_for(v);
  o.case_files = s.case_files;
  std::optional<Progress> progress;
  if (world.root() && s.jobs > 1 && world.size() == 1)  // what --jobs gave (docs/design.md#jobs)
    fmt::print("{}: {} at once\n", v.name,
               properties::jobs_for(v, s.jobs) > 1
                   ? fmt::format("{} cases", properties::jobs_for(v, s.jobs))
                   : std::string("one case (its kernel runs one call at a time)"));
  if (world.root()) {
    progress.emplace(std::string(info(s.op).name) + " " + v.name + " " +
                     std::string(name(o.format)));
    o.progress = properties::serialized(
        [&progress](int n, int total, const char* phase) { (*progress)(n, total, phase); });
  }
  return certify_shared(o, world);
}

// The command that replays a token as printed, from any folder: a
// plugin's names its library by its absolute path and its kernel
// (--plugin LIB.so#NAME, without which reproduce refuses a plugin's token)
// and the --timeout its calls had, when not the default; a worker's, its
// command (--worker "CMD": the token names its kernel).
std::string reproduce_command(const std::string& token, const CertifyArgs& a,
                              const kernels::Variant& v) {
  std::string line = "moacert reproduce " + token;
  if (!a.worker.empty()) {
    line += " --worker " + shell_word(a.worker);
    if (a.timeout != CertifyArgs{}.timeout) line += fmt::format(" --timeout {}", a.timeout);
    return line;
  }
  if (a.plugin.empty()) return line;
  const std::string lib = a.plugin.substr(0, a.plugin.rfind('#'));  // LIB.so[#NAME]
  line += " --plugin " + shell_word(fs::absolute(lib).lexically_normal().string() + "#" +
                                    kernels::plugin::kernel_name_of(v.name));
  if (a.timeout != CertifyArgs{}.timeout) line += fmt::format(" --timeout {}", a.timeout);
  return line;
}

// The figure beside a verdict: the largest error / allowed, a failing
// run's that of its counterexample (docs/certificate.md). Where it is
// infinite, why: the worst element was allowed no error at all (its exact
// value is one the format holds, -inf or 0 on a row with no key, and must
// come out exactly), or no output was judged.
std::string worst_figure(const properties::Certificate& cert) {
  const std::string figure = fmt::format("worst error/allowed {:.3g}", cert.worst_ratio);
  if (cert.holds || std::isfinite(cert.worst_ratio)) return figure;
  if (cert.failure_elements.empty()) return figure + ": no output was judged";
  const properties::ElementReport& e = cert.failure_elements.front();
  if (e.allowed != 0) return figure;
  return figure + fmt::format(": {}{} is allowed no error, exact {:.6g}, computed {:.6g}", e.tensor,
                              e.index.str(), e.exact, e.computed);
}

// certify's lines on one variant's certificate: its verdict, the ranks'
// shares of the cases, the SIMT emulator's counters, the traffic check, and
// on a failure why and how to replay it.
void print_verdict(const CertifyArgs& a, const CertifySettings& s, const kernels::Variant& v,
                   const SharedCertificate& shared, int ranks) {
  const properties::Certificate& cert = shared.cert;
  const std::string ran =
      s.case_files.empty()
          ? fmt::format("{} curated + {} random cases", cert.curated_run, cert.random_run)
          : fmt::format("{} of {} case files", cert.case_files_run, s.case_files.size());
  fmt::print("{} {} {}: {} ({}, {})\n", a.op, v.name, name(cert.format),
             cert.holds ? "holds" : "FAILS", ran, worst_figure(cert));
  if (ranks > 1) {
    std::string each;
    for (std::size_t r = 0; r < shared.cases_by_rank.size(); ++r)
      each += fmt::format("{}rank {} {}", r ? ", " : "", r, shared.cases_by_rank[r]);
    fmt::print("ranks: {} (cases judged: {}){}\n", ranks, each,
               shared.failing_rank >= 0
                   ? fmt::format("; the counterexample was judged by rank {}", shared.failing_rank)
                   : std::string());
  }
  // A declared arithmetic raises the bounds: beside the verdict under it,
  // the standard model's, and what the cases' errors need
  // (docs/design.md#arithmetic).
  if (!v.arithmetic.standard())
    fmt::print("arithmetic declared: {} (the bounds are derived for it)\n",
               to_string(v.arithmetic));
  if (cert.arithmetic_checked && !v.arithmetic.standard())
    fmt::print("under the standard model: {}, worst error/allowed {:.3g}\n",
               cert.standard_holds ? "holds" : "fails", cert.standard_worst_ratio);
  if (cert.arithmetic_checked && !cert.standard_holds)
    fmt::print("needs: {}\n", cert.needs.empty()
                                  ? "no arithmetic of the vocabulary explains its errors"
                                  : cert.needs);
  // How the kernel takes its problem, where it declares something of its
  // own (docs/design.md#conventions): what the DNF followed, and the
  // outputs never judged.
  for (const properties::TensorSummary& t : cert.tensors)
    if (!t.produced) fmt::print("{}: not produced (declared), not judged\n", t.name);
  if (v.conventions.causal_alignment != CausalAlignment::bottom_right)
    fmt::print("causal alignment declared: {} (the DNF's mask follows it)\n",
               name(v.conventions.causal_alignment));
  if (v.conventions.params != ParamFormat::f64)
    fmt::print("params declared: {} (scale and eps rounded to it before the DNF)\n",
               name(v.conventions.params));
  if (!v.conventions.tensor_formats.empty())
    fmt::print("tensor formats declared: {} (each judged in its own; the rest in {})\n",
               to_string(Conventions{.tensor_formats = v.conventions.tensor_formats})
                   .substr(sizeof "tensor_formats"),
               name(cert.format));
  // Where an allowance is infinite (an upstream stage's bound is), the rule
  // says nothing: said beside the verdict (docs/certificate.md).
  for (const properties::TensorSummary& t : cert.tensors)
    if (t.unbounded > 0)
      fmt::print("rule vacuous for {}: {} of {} judged elements have an infinite bound\n", t.name,
                 t.unbounded, t.elements);
  for (const properties::TensorSummary& t : cert.tensors)
    if (t.declared_vacuous > 0)
      fmt::print(
          "declared arithmetic bounds nothing for {} past its reach: {} of {} judged "
          "elements judged under the standard model\n",
          t.name, t.declared_vacuous, t.elements);
  // What the kernel declares it supports (plugin ABI 2): every case was
  // drawn inside it, and the certificate records it.
  if (const kernels::Envelope e = v.declared_envelope();
      !e.unlimited() || e.device != kernels::Device::cpu) {
    fmt::print("envelope: {} (cases drawn inside it only)\n", e.str());
    const properties::EnvelopeExclusions out = properties::excluded_by(cert.op, e);
    for (const properties::EnvelopeExclusion& x : out.regimes)
      fmt::print("envelope excludes regime {}: {}\n", x.what, x.why);
    for (const properties::EnvelopeExclusion& x : out.deployment_scale)
      fmt::print("envelope excludes deployment-scale {}: {}\n", x.what, x.why);
  }
  // Where moacert draws short of what the kernel supports (the SIMT
  // emulator's token counts): how far, why, and what that excludes.
  if (const auto reach = properties::excluded_by_reach(v); !reach.empty()) {
    fmt::print("drawn within {} ({}; --shape reaches past it)\n", v.reach.str(), v.reach_why);
    for (const properties::EnvelopeExclusion& x : reach)
      fmt::print("envelope excludes deployment-scale {}: {}\n", x.what, x.why);
  }
  if (cert.refused > 0)
    fmt::print("refused outside the envelope: {} case{} (counted, never a counterexample)\n",
               cert.refused, cert.refused == 1 ? "" : "s");
  // A kernel on the SIMT emulator: its counters, summed over every call of
  // this certification (docs/simt.md#counters), join the certificate.
  if (!shared.simt_counters.empty())
    fmt::print("simt counters (all calls): {}\n", shared.simt_counters);
  // Recorded beside the verdict, not part of it (docs/design.md, certify).
  if (cert.traffic_checked)
    fmt::print("global traffic per launch and tensor vs the cost function: {}\n",
               cert.traffic_mismatches == 0
                   ? std::string("equal in every case")
                   : fmt::format("{} cases differ; first: {}", cert.traffic_mismatches,
                                 cert.traffic_mismatch));
  // A user's kernel claiming no determinism: how much its worst case
  // moves with the thread count (docs/design.md#threads-and-determinism).
  if (!cert.thread_counts.empty()) {
    std::string each;
    for (const auto& [tensor, ulps] : cert.thread_spread_ulps)
      each += fmt::format("{}{} {:.3g} ulp", each.empty() ? "" : ", ", tensor, ulps);
    fmt::print("spread across {} threads (worst case, not judged): {}\n",
               fmt::join(cert.thread_counts, ", "), each);
  }
  // Shrinking keeps any smaller case that still fails: the worst case
  // found, as drawn, beside the shrunk one (docs/certificate.md), each on
  // one line, its shape and values (the layouts are the certificate's);
  // nothing more where the case drawn is the case shrunk.
  if (!cert.worst_found_case.empty() && cert.worst_found_case != cert.failure_case) {
    auto first_line = [](const std::string& text) { return text.substr(0, text.find('\n')); };
    fmt::print("worst found (before shrinking): error/allowed {:.3g} at {}\n",
               cert.worst_found_ratio, first_line(cert.worst_found_case));
    fmt::print("shrunk to: error/allowed {:.3g} at {}\n", cert.worst_ratio,
               first_line(cert.failure_case));
  }
  if (!cert.holds) {
    fmt::print("{}\n", cert.failure);
    if (s.case_files.empty())
      fmt::print("reproduce: {}\n", cert.reproduce_command);
    else
      fmt::print("{}\n", cert.failure_case);  // the case file that fails
  }
}

// What the run missed, said once for the op: `missed(cert)` lists what a
// variant's cases missed, and the line `what: ...` names it. The variants
// of an op draw the same cases but where their tiles, extents or envelopes
// change them, so variants that missed other things are named with theirs
// ("what by V1, V2's cases: ...").
template <class Missed>
void print_missed_once(const std::vector<properties::Certificate>& certs, std::string_view what,
                       Missed&& missed) {
  struct Set {
    std::vector<std::string> items, variants;  // the variants whose cases missed the items
  };
  std::vector<Set> sets;
  for (const properties::Certificate& cert : certs) {
    std::vector<std::string> items = missed(cert);
    auto it =
        std::find_if(sets.begin(), sets.end(), [&](const Set& u) { return u.items == items; });
    if (it == sets.end()) it = sets.insert(sets.end(), {std::move(items), {}});
    it->variants.push_back(cert.variant);
  }
  for (const Set& u : sets) {
    if (u.items.empty()) continue;
    if (sets.size() == 1)
      fmt::print("{}: {}\n", what, fmt::join(u.items, ", "));
    else
      fmt::print("{} by {}'s cases: {}\n", what, fmt::join(u.variants, ", "),
                 fmt::join(u.items, ", "));
  }
}

// Regime coverage (docs/design.md#numerical-regimes): the declared regimes
// no case of the run reached.
void print_unreached_regimes(const std::vector<properties::Certificate>& certs) {
  print_missed_once(certs, "regimes not reached in this run", [](const auto& cert) {
    std::vector<std::string> regimes;
    for (const auto& [regime, cases] : cert.regime_cases)
      if (cases == 0) regimes.push_back(regime);
    return regimes;
  });
}

// Envelope coverage (docs/design.md#deployment-envelope): the thresholds no
// judged case crossed, per axis ("N 32768, L 131072").
void print_uncrossed_thresholds(const std::vector<properties::Certificate>& certs) {
  print_missed_once(certs, "envelope thresholds no case crossed", [](const auto& cert) {
    std::vector<std::string> thresholds;
    for (const auto& r : cert.envelope_reach)
      if (!r.not_crossed.empty())
        thresholds.push_back(fmt::format("{} {}", r.axis, fmt::join(r.not_crossed, " ")));
    return thresholds;
  });
}

// Random cases past --max-memory, drawn but never started (discarded:
// CertifyOptions::fits), per variant.
void print_discarded(const std::vector<properties::Certificate>& certs, std::uint64_t max_memory) {
  for (const properties::Certificate& cert : certs)
    if (cert.discarded > 0)
      fmt::print("{}: {} of {} random cases need more than --max-memory {}: not run\n",
                 cert.variant, cert.discarded, cert.discarded + cert.random_run,
                 bytes_text(double(max_memory)));
}

// The root's files: each certificate (in a folder per variant when there
// are several, with their summary beside), and the JUnit XML.
void write_outputs(const CertifyArgs& a, const std::vector<properties::Certificate>& certs,
                   const std::vector<std::string>& simt_counters,
                   const std::vector<const kernels::Variant*>& variants,
                   const reports::Provenance& provenance) {
  const fs::path out(a.out);
  for (std::size_t k = 0; k < certs.size(); ++k)
    write_certificate(certs.size() > 1 ? out / certs[k].variant : out, certs[k], simt_counters[k],
                      *variants[k], provenance);
  if (certs.size() > 1) {
    files::write_atomically(out / "certificate.json",
                            reports::summary_json(certs, build_info(), provenance).dump(2) + "\n");
    files::write_atomically(out / "certificate.md",
                            reports::summary_markdown(certs, build_info(), provenance));
    write_page(out / "report.html", reports::summary_html(certs, build_info(), provenance));
  }
  if (!a.junit.empty()) files::write_atomically(a.junit, reports::to_junit(certs, build_info()));
}

// Without --variant, the op's variants that cannot run what was asked —
// the format (--dtype, or the case files') or the --shape or a --case
// file, past their envelope — are left out of `variants`, not refused:
// `certify attention.fwd --dtype f64` certifies every variant that runs
// f64, and `--shape D=256` every one whose envelope holds it. Returns a line per
// variant left out, why (empty when none is); throws UsageError, with the
// first variant's reason, when none is left.
std::string leave_out_what_cannot_run(const CertifyArgs& a, const CertifySettings& s,
                                      std::vector<const kernels::Variant*>& variants) {
  if (!a.variant.empty() || !a.plugin.empty() || !a.worker.empty()) return "";
  std::string lines, first_reason;
  std::erase_if(variants, [&](const kernels::Variant* v) {
    std::string why;
    if (s.format && !v->supports(*s.format)) {
      std::vector<std::string_view> formats;
      for (const Format f : v->formats) formats.push_back(name(f));
      why = fmt::format("it runs {}, not {}", fmt::join(formats, ", "), name(*s.format));
    } else {
      try {
        properties::within_variant(s.shape, *v);
      } catch (const std::invalid_argument& e) {
        why = e.what();
      }
      if (why.empty()) why = case_outside_envelope(s, *v);
    }
    if (why.empty()) return false;
    if (first_reason.empty()) first_reason = why;
    lines += fmt::format("{}: {} not certified: {}\n", a.op, v->name, why);
    return true;
  });
  if (variants.empty())
    throw UsageError("no variant of " + a.op + " can run what was asked: " + first_reason);
  return lines;
}

int run_certify(const CertifyArgs& a) {
  const std::optional<Op> op = parse_op(a.op);
  if (!op) throw UsageError("unknown op '" + a.op + "' (moacert list shows the ops)");
  check_timeout(a.timeout);
  const std::uint64_t max_memory = max_memory_of(a.max_memory);
  std::optional<kernels::Variant> plugin;
  std::vector<const kernels::Variant*> variants = chosen_variants(a, *op, plugin);
  const CertifySettings settings = certify_settings(a, *op);
  const std::string left_out = leave_out_what_cannot_run(a, settings, variants);
  for (const kernels::Variant* v : variants) refuse_what_cannot_run(settings, *v, max_memory);
  // Under mpirun the ranks share each variant's cases (cli/shared_certify.hpp)
  // and the root alone checks and writes the files, after every variant is
  // done: a run that fails half-way (a rank killed) leaves no certificate.
  Ranks& world = ranks();
  CreatedFolders created;
  refuse_unwritable_outputs(a, variants, world, created);
  const reports::Provenance provenance =
      world.root() ? reports::gather_provenance(command_line()) : reports::Provenance{};
  if (world.root()) fmt::print("{}", left_out);
  std::vector<properties::Certificate> certs;
  std::vector<std::string> simt_counters;
  for (const kernels::Variant* v : variants) {
    SharedCertificate shared = certify_on_ranks(settings, *v, world);
    if (!world.root()) continue;
    if (!shared.cert.worst_token.empty())
      shared.cert.reproduce_command = reproduce_command(shared.cert.worst_token, a, *v);
    print_verdict(a, settings, *v, shared, world.size());
    certs.push_back(std::move(shared.cert));
    simt_counters.push_back(std::move(shared.simt_counters));
  }
  if (!world.root()) return world.share(0);  // the root's status, on every rank
  print_unreached_regimes(certs);
  print_uncrossed_thresholds(certs);
  print_discarded(certs, settings.max_memory);
  write_outputs(a, certs, simt_counters, variants, provenance);
  created.keep();
  const bool all_hold = std::all_of(certs.begin(), certs.end(),
                                    [](const properties::Certificate& c) { return c.holds; });
  return world.share(all_hold ? 0 : 1);
}

struct ReproduceArgs {
  std::string token, variant, save, plugin, worker, max_memory;
  double timeout = 60;
};

int run_reproduce(const ReproduceArgs& a) {
  const std::string& text = a.token;
  const std::string& save = a.save;
  std::string why;
  const std::optional<properties::Token> token = properties::Token::decode(text, &why);
  if (!token) throw UsageError("bad token: " + why);
  check_timeout(a.timeout);
  const std::uint64_t max_memory = max_memory_of(a.max_memory);
  std::optional<kernels::Variant> plugin;
  if (!a.worker.empty()) {
    // Without --variant, the token's own kernel name picks among several.
    plugin = load_worker(a.worker, a.plugin, a.variant, a.timeout, token->op,
                         kernels::worker::kernel_name_of(token->variant));
  } else if (token->variant.rfind("worker:", 0) == 0 && a.variant.empty()) {
    throw UsageError("the token names " + token->variant +
                     ": give its command with --worker \"CMD\" (or --variant another)");
  } else if (!a.plugin.empty()) {
    // Without #NAME, the token's own kernel name picks among several.
    plugin = load_plugin(a.plugin, a.variant, a.timeout, token->op,
                         "the token's case of " + std::string(info(token->op).name),
                         kernels::plugin::kernel_name_of(token->variant));
  } else if (token->variant.rfind("plugin:", 0) == 0 && a.variant.empty()) {
    throw UsageError("the token names " + token->variant +
                     ": give its library with --plugin LIB.so (or --variant another)");
  }
  const std::string vname = plugin ? plugin->name : a.variant.empty() ? token->variant : a.variant;
  const kernels::Variant* v =
      plugin ? &*plugin : kernels::Registry::builtin().find(token->op, vname);
  if (!v) {
    throw UsageError("no variant '" + vname + "' of " + std::string(info(token->op).name) +
                     " in this build (--variant picks another)");
  }
  if (!v->supports(token->format)) {
    throw UsageError("variant " + vname + " does not support " + std::string(name(token->format)));
  }
  if (const std::string refused = kernels::cannot_run(*v); !refused.empty())
    throw UsageError(v->name + ": " + refused);
  if (const auto spec = properties::spec_of(*token)) {
    const kernels::Variant* torch = token->rule.kind == properties::Rule::vs_torch
                                        ? properties::torch_for(token->op, token->format)
                                        : nullptr;
    check_case_budget(spec->problem, max_memory, "the token's case", *v, spec->layouts, torch);
  }
  const properties::Replay r = properties::replay(*token, *v);
  if (!save.empty()) {
    // The case file of docs/design.md, e.g. for tests/regressions/.
    try {
      files::write_atomically(save, oracle::case_file_text(oracle::write_case(r.c)));
    } catch (const std::exception& e) {
      throw UsageError(std::string("cannot write the case: ") + e.what());
    }
    fmt::print("case written to {}\n", save);
  }
  fmt::print("{}\n", properties::describe(r.spec));
  fmt::print("variant {}, rule {}: {}\n", vname, token->rule.str(),
             r.verdict.holds ? "holds" : "FAILS");
  if (!r.verdict.holds) fmt::print("{}\n", r.verdict.why);
  fmt::print("{:<6} {:<16} {:>24} {:>24} {:>10} {:>12}\n", "tensor", "index", "exact", "computed",
             "ulps",
             token->rule.kind == properties::Rule::apriori   ? "bound"
             : token->rule.kind == properties::Rule::max_ulp ? "allowed ulp"
                                                             : "allowed");  // vs-torch: absolute
  for (const auto& e : r.worst) {
    fmt::print("{:<6} {:<16} {:>24.17g} {:>24.17g} {:>10.3g} {:>12.3g}\n", e.tensor, e.index.str(),
               e.exact, e.computed, e.ulps, e.allowed);
  }
  return r.verdict.holds ? 0 : 1;
}

}  // namespace

void add_certify(CLI::App& app, int& status) {
  auto a = std::make_shared<CertifyArgs>();
  CLI::App* cmd = app.add_subcommand("certify", "certify variants of an op against the oracle");
  cmd->add_option("op", a->op, "the op (moacert list)")->required();
  cmd->add_option("--variant", a->variant, "one variant (default: every variant of the op)");
  cmd->add_option("--dtype", a->dtype, "f64, f32, bf16 or f16 (default f32)");
  cmd->add_option("--cases", a->cases, "random cases after the curated ones (default 200)");
  cmd->add_option("--seed", a->seed, "seed of the random cases (default: from the clock)");
  cmd->add_option("--threads", a->threads,
                  "threads each kernel call runs with: a plugin's params and a worker's call "
                  "carry it (default 0: the kernel's own choice)");
  cmd->add_option("--jobs", a->jobs,
                  "cases judged at once, where the variant allows it (default 1; the certificate "
                  "is the same)");
  cmd->add_option("--rule", a->rule, "apriori (default), max-ulp=K or vs-torch=R");
  cmd->add_option("--out", a->out, "output folder (default moacert-out)");
  cmd->add_option("--plugin", a->plugin,
                  "certify a plugin kernel: LIB.so[#NAME] (docs/plugins.md)");
  cmd->add_option("--worker", a->worker,
                  "certify a worker's kernel: \"CMD ARGS\" (docs/worker-protocol.md)");
  cmd->add_option("--timeout", a->timeout, "seconds a plugin or worker call may take (default 60)");
  cmd->add_option("--max-memory", a->max_memory,
                  "refuse cases needing more, e.g. 4G (default: half the RAM)");
  cmd->add_option("--shape", a->shape,
                  "fix extents (N=4096,D=128) or bound them (N=1..8192); the others stay random");
  cmd->add_option("--case", a->case_files,
                  "judge these case files (docs/case-files.md) instead of generated cases");
  cmd->add_option("--arithmetic-at-most", a->arithmetic_at_most,
                  "fail a kernel that declares or needs more freedom than SPEC "
                  "(docs/design.md#arithmetic; e.g. standard)");
  cmd->add_option("--junit", a->junit,
                  "also write JUnit XML, one test case per variant and format");
  cmd->callback([a, &status] { status = run_certify(*a); });
}

void add_reproduce(CLI::App& app, int& status) {
  auto a = std::make_shared<ReproduceArgs>();
  CLI::App* cmd = app.add_subcommand("reproduce", "re-create a counterexample from its token");
  cmd->add_option("token", a->token, "the token printed by certify")->required();
  cmd->add_option("--variant", a->variant, "judge another variant on the same case");
  cmd->add_option("--plugin", a->plugin, "judge a plugin kernel: LIB.so[#NAME]");
  cmd->add_option("--worker", a->worker, "judge a worker's kernel: \"CMD ARGS\"");
  cmd->add_option("--timeout", a->timeout, "seconds a plugin or worker call may take (default 60)");
  cmd->add_option("--max-memory", a->max_memory,
                  "refuse a case needing more (default: half the RAM)");
  cmd->add_option("--save", a->save,
                  "also write the case as a case file (tests/regressions/NAME.json)");
  cmd->callback([a, &status] { status = run_reproduce(*a); });
}

}  // namespace moacert::cli
