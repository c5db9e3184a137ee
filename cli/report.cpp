// `moacert report`: the error-bound table across ops, variants and formats
// (docs/design.md, "report"): certifies each (a worker's kernels too,
// --worker "CMD"), or reads existing certificate folders (--from), and
// writes report.md, report.tex (booktabs) and
// report.html. Every certificate is read and checked before anything is
// written: a bad --from folder exits 2 with one line naming the file.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "cli/certificate_files.hpp"
#include "cli/commands.hpp"
#include "cli/ranks.hpp"
#include "cli/shape.hpp"
#include "files/atomic_write.hpp"
#include "kernels/registry.hpp"
#include "kernels/worker/worker.hpp"
#include "properties/certify.hpp"
#include "properties/wire.hpp"
#include "reports/index_page.hpp"
#include "reports/table.hpp"

namespace moacert::cli {

namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::string ops, variants, dtypes = "f32";
  int cases = 20;
  std::uint64_t seed = 1;
  std::string out = "moacert-report";
  std::vector<std::string> from;
  bool index = false;   // with --from: index.{html,md}, one page for the run, not the table
  std::string worker;   // CMD ARGS: its kernels join the table (docs/worker-protocol.md)
  double timeout = 60;  // seconds per worker call
};

struct Planned {
  Op op;
  const kernels::Variant* variant;
  Format format;
};

// Every (op, variant, format) the options name; each name must mean
// something in this build or be one of the worker's kernels (`served`).
// With --worker and no --variants, the worker's kernels alone (as bench
// times them alone).
std::vector<Planned> plan(const ReportArgs& a, const std::vector<kernels::Variant>& served) {
  std::vector<Op> ops;
  if (a.ops.empty()) {
    for (const OpInfo& o : all_ops()) ops.push_back(o.op);
  } else {
    for (const std::string& n : split(a.ops, ',')) {
      const auto op = parse_op(n);
      if (!op) throw UsageError("report: unknown op '" + n + "' (moacert list shows the ops)");
      ops.push_back(*op);
    }
  }
  std::vector<Format> formats;
  for (const std::string& n : split(a.dtypes, ',')) {
    const auto f = parse_format(n);
    if (!f) throw UsageError("report: unknown dtype '" + n + "' (f64, f32, bf16, f16)");
    formats.push_back(*f);
  }
  const std::vector<std::string> names =
      a.variants.empty() ? std::vector<std::string>{} : split(a.variants, ',');
  const auto& registry = kernels::Registry::builtin();
  auto of_op = [&](Op op) {
    std::vector<const kernels::Variant*> vs;
    if (a.worker.empty() || !names.empty()) vs = registry.of(op);
    for (const kernels::Variant& v : served)
      if (v.op == op) vs.push_back(&v);
    return vs;
  };
  for (const std::string& n : names) {
    bool known = false;
    for (Op op : ops)
      for (const kernels::Variant* v : of_op(op)) known = known || v->name == n;
    if (!known) throw UsageError("report: no variant '" + n + "' of the ops chosen (moacert list)");
  }
  if (!a.worker.empty() &&
      std::none_of(served.begin(), served.end(), [&](const kernels::Variant& v) {
        return std::find(ops.begin(), ops.end(), v.op) != ops.end();
      }))
    throw UsageError("report: worker " + a.worker + " declares no kernel of the ops chosen");
  std::vector<Planned> out;
  for (Op op : ops) {
    for (const kernels::Variant* v : of_op(op)) {
      const bool named = std::find(names.begin(), names.end(), v->name) != names.end();
      const bool worker_kernel = v->backend == "worker";
      if (!names.empty() && !named && !worker_kernel) continue;
      for (Format f : formats)
        if (v->supports(f)) out.push_back({op, v, f});
    }
  }
  if (out.empty()) throw UsageError("report: no variant of the ops chosen runs the dtypes chosen");
  return out;
}

void write_tables(const fs::path& out, const std::vector<reports::TableRow>& rows,
                  const std::vector<nlohmann::json>& certificates) {
  files::write_atomically(out / "report.md", reports::table_markdown(rows));
  files::write_atomically(out / "report.tex", reports::table_latex(rows));
  write_page(out / "report.html", reports::report_page(rows, certificates));
  fmt::print("report: {} rows in {}/report.{{md,tex,html}}\n", rows.size(), out.string());
}

// index.html and index.md in `out`: a row per certificate, linked to its
// folder (`files`: each one's certificate.json) relative to `out`.
void write_index(const fs::path& out, std::vector<nlohmann::json> certificates,
                 const std::vector<fs::path>& files) {
  std::vector<reports::IndexEntry> entries;
  const fs::path from = fs::absolute(out).lexically_normal();
  for (std::size_t k = 0; k < certificates.size(); ++k) {
    const fs::path dir = fs::absolute(files[k]).lexically_normal().parent_path();
    entries.push_back({std::move(certificates[k]), dir.lexically_relative(from).string()});
  }
  files::write_atomically(out / "index.md", reports::index_markdown(entries));
  write_page(out / "index.html", reports::index_html(entries));
  fmt::print("report: {} certificates in {}/index.{{md,html}}\n", entries.size(), out.string());
}

void require_folder(const fs::path& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out))
    throw UsageError("report: cannot create output folder " + out.string());
}

// The command that replays a failing row's counterexample, as certify
// prints it: a worker's kernel with its command (and --timeout when not
// the default).
std::string reproduce_line(const std::string& token, const ReportArgs& a,
                           const kernels::Variant& v) {
  std::string line = "moacert reproduce " + token;
  if (v.backend != "worker") return line;
  line += " --worker " + shell_word(a.worker);
  if (a.timeout != ReportArgs{}.timeout) line += fmt::format(" --timeout {}", a.timeout);
  return line;
}

int run_report(const ReportArgs& a) {
  const fs::path out(a.out);
  std::vector<reports::TableRow> rows;
  if (!a.from.empty() && !a.worker.empty())
    throw UsageError("report: --from reads certificates and runs nothing: give --from or --worker");
  if (a.index && a.from.empty())
    throw UsageError("report: --index pages certificates already written: give --from");
  if (!a.from.empty()) {
    // Read everything first: a bad folder leaves nothing written.
    std::vector<nlohmann::json> certificates;
    std::vector<fs::path> files;
    for (const std::string& dir : a.from) {
      try {
        for (auto& c : reports::read_certificates(dir, &files))
          certificates.push_back(std::move(c));
      } catch (const reports::BadCertificate& e) {
        throw UsageError(std::string("report: ") + e.what());
      }
    }
    require_folder(out);
    if (a.index) {
      write_index(out, std::move(certificates), files);
      return 0;
    }
    for (const auto& c : certificates)
      for (auto& r : reports::rows_of(c)) rows.push_back(std::move(r));
    write_tables(out, rows, certificates);
    return 0;
  }
  if (a.cases < 1)
    throw UsageError("report: --cases must be at least 1, got " + std::to_string(a.cases));
  // The worker's kernels, served by one process for the whole report (on
  // each rank its own).
  std::vector<kernels::Variant> served;
  if (!a.worker.empty()) {
    kernels::worker::LoadOptions lo;
    lo.timeout_s = a.timeout;
    served = kernels::worker::load_all(a.worker, lo);
  }
  const std::vector<Planned> planned = plan(a, served);
  // Under mpirun the ranks share the runs, run j on rank j mod K; each sends
  // its certificates' files to the root, which alone writes, once all
  // arrived, in the plan's order (docs/design.md#ranks-mpirun).
  Ranks& world = ranks();
  std::string refusal;
  if (world.root()) {
    try {
      require_folder(out);
    } catch (const UsageError& e) {
      refusal = e.what();
    }
  }
  if (world.share(refusal.empty() ? 0 : 1) != 0) throw UsageError(refusal);  // said by the root
  const reports::Provenance provenance = reports::gather_provenance(command_line());
  properties::WireWriter mine;
  for (std::size_t j = std::size_t(world.rank()); j < planned.size();
       j += std::size_t(world.size())) {
    const Planned& p = planned[j];
    properties::CertifyOptions o;
    o.variant = p.variant;
    o.format = p.format;
    o.cases = a.cases;
    o.seed = a.seed;
    const properties::Certificate cert = properties::certify(o);
    const std::string counters =
        p.variant->instrumentation ? p.variant->instrumentation->simt_counters() : "";
    const CertificateFiles files = render_certificate(cert, counters, *p.variant, provenance);
    mine.put(std::uint64_t(j));
    mine.put(cert.holds);
    mine.put(files.json.dump());
    mine.put(files.markdown);
    mine.put(files.page.html);
    mine.put(files.page.no_plots);
  }
  const std::vector<std::string> all = world.gather(mine.take());
  if (!world.root()) return world.share(0);  // the root's status, on every rank
  std::vector<std::pair<bool, CertificateFiles>> done(planned.size());
  for (const std::string& theirs : all) {
    properties::WireReader in(theirs);
    while (!in.done()) {
      auto& [holds, files] = done.at(in.get<std::uint64_t>());
      holds = in.get<bool>();
      files.json = nlohmann::json::parse(in.get_string());
      files.markdown = in.get_string();
      files.page.html = in.get_string();
      files.page.no_plots = in.get_string();
    }
  }
  bool all_hold = true;
  std::vector<nlohmann::json> certificates;
  for (std::size_t j = 0; j < planned.size(); ++j) {
    const Planned& p = planned[j];
    const auto& [holds, files] = done[j];
    const fs::path dir = out / "certificates" / std::string(info(p.op).name) /
                         std::string(name(p.format)) / p.variant->name;
    require_folder(dir);
    write_certificate_files(dir, files);
    certificates.push_back(files.json);
    for (auto& r : reports::rows_of(files.json)) rows.push_back(std::move(r));
    fmt::print("{} {} {}: {}\n", info(p.op).name, p.variant->name, name(p.format),
               holds ? "holds" : "FAILS");
    if (!holds && files.json.contains("counterexample"))
      fmt::print("reproduce: {}\n",
                 reproduce_line(files.json["counterexample"].value("token", ""), a, *p.variant));
    all_hold = all_hold && holds;
  }
  write_tables(out, rows, certificates);
  return world.share(all_hold ? 0 : 1);
}

}  // namespace

void add_report(CLI::App& app, int& status) {
  auto a = std::make_shared<ReportArgs>();
  CLI::App* cmd = app.add_subcommand(
      "report", "the error-bound table across ops, variants and formats (Markdown, LaTeX, HTML)");
  cmd->add_option("--ops", a->ops, "comma-separated ops (every op)");
  cmd->add_option("--variants", a->variants, "comma-separated variants (every variant, torch too)");
  cmd->add_option("--dtypes", a->dtypes, "comma-separated formats (f32)");
  cmd->add_option("--cases", a->cases, "random cases per variant and format (20)");
  cmd->add_option("--seed", a->seed, "seed of the random cases (1)");
  cmd->add_option("--out", a->out, "output folder (moacert-report)");
  cmd->add_option("--from", a->from,
                  "build the table from these certificate folders, running nothing")
      ->expected(1, -1);
  cmd->add_flag("--index", a->index,
                "with --from: write index.html and index.md, a row per certificate with its "
                "verdict, time and error histogram, linked to it, instead of the table");
  cmd->add_option("--worker", a->worker,
                  "certify a worker's kernels too: \"CMD ARGS\" (docs/worker-protocol.md); "
                  "without --variants, its kernels alone");
  cmd->add_option("--timeout", a->timeout, "seconds a worker call may take (default 60)");
  cmd->callback([a, &status] { status = run_report(*a); });
}

}  // namespace moacert::cli
