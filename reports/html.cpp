#include "reports/html.hpp"

#include <cmath>
#include <sstream>

#include <fmt/core.h>

#include "reports/html_escape.hpp"
#include "reports/plot_data.hpp"
#include "reports/plots.hpp"
#include "reports/table.hpp"

namespace moacert::reports {

namespace {

std::string figure(double x) {
  return fmt::format("{:.3g}", x);
}

// The page's style; its closing script (kPlotCheckScript) is the check a
// browser runs on it: every plot present and drawn with its marks
// (tests/reports/browser_check.py reads the body's data-plots-drawn).
constexpr const char* kHead = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 72em; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0 1.5em; }}
th, td {{ border: 1px solid #bbb; padding: 0.2em 0.6em; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
table.bounds td:nth-child(-n+4) {{ text-align: left; }}
.plots {{ display: flex; flex-wrap: wrap; gap: 1em; }}
figure {{ margin: 0; border: 1px solid #ddd; padding: 0.5em; }}
figure svg {{ width: 640px; height: 360px; }}
.holds {{ color: #060; }} .fails {{ color: #b00; }}
code {{ word-break: break-all; }}
table.index td:nth-child(-n+4) {{ text-align: left; }}
td figure {{ border: 0; padding: 0; }} td figure svg {{ width: 400px; height: 150px; }}
td figcaption {{ display: none; }}
</style></head>
<body data-plots="{}">
)";

// The bins of `h` that hold something, for histogram_script.
std::vector<HistogramBin> bins_of(const properties::ErrorHistogram& h) {
  std::vector<HistogramBin> bins;
  const auto& axis = h.axis();
  for (int i = 0; i < axis.size(); ++i)
    if (h.at(i) != 0) bins.push_back({axis.bin(i).lower(), axis.bin(i).upper(), double(h.at(i))});
  return bins;
}

// Bars of named pairs: (label, first, second), titled `a` and `b`; `marks`
// the bars of nonzero height. Empty when a height is not finite (a NaN
// output's error is infinite): gnuplot draws no such bar and fails on a
// series with none, and the tables hold the figures.
std::string pair_bars_script(const std::vector<std::tuple<std::string, double, double>>& rows,
                             const std::string& a, const std::string& b, const std::string& ylabel,
                             const std::string& title, int* marks) {
  std::ostringstream s;
  s << "$d << EOD\n";
  *marks = 0;
  for (const auto& [label, x, y] : rows)
    if (!std::isfinite(x) || !std::isfinite(y)) return "";
  for (const auto& [label, x, y] : rows) {
    s << fmt::format("\"{}\" {:.17g} {:.17g}\n", label, x, y);
    *marks += (x != 0) + (y != 0);
  }
  s << "EOD\n"
    << "set title '" << title << "' noenhanced\nset style data histograms\n"
    << "set style histogram clustered gap 1\nset style fill solid 0.7\nset ylabel '" << ylabel
    << "'\nset yrange [0:*]\nset grid y\nset key top left\n"
    << "plot $d using 2:xtic(1) title '" << a << "' lc rgb '#3060a0', '' using 3 title '" << b
    << "' lc rgb '#c06020'\n";
  return s.str();
}

std::string provenance_table(const Provenance& p) {
  std::ostringstream h;
  h << "<h2>Provenance</h2>\n<table>\n";
  auto row = [&](const std::string& k, const std::string& v) {
    h << "<tr><td>" << html_escape(k) << "</td><td style=\"text-align:left\">" << html_escape(v)
      << "</td></tr>\n";
  };
  row("CPU", fmt::format("{} ({} packages, {} cores, {} hardware threads, {} NUMA nodes)",
                         p.cpu_model, p.packages, p.cores, p.hardware_threads, p.numa_nodes));
  for (const auto& [level, bytes] : p.caches)
    row(level + " cache", fmt::format("{} KiB", bytes / 1024));
  row("OS", p.os + "; " + p.kernel);
  row("compiler", p.compiler);
  row("flags", p.flags);
  row("git commit", p.git_commit);
  for (const auto& [name, version] : p.libraries) row(name, version);
  row("command", p.command_line);
  row("date", p.date);
  h << "</table>\n";
  return h.str();
}

std::string no_plots_note(const Plots& plots) {
  if (plots.why().empty()) return "";
  return "<p><strong>This report has no plots: " + html_escape(plots.why()) +
         ".</strong> The tables hold every figure.</p>\n";
}

}  // namespace

Page to_html(const properties::Certificate& c, const BuildInfo& build,
             const Provenance& provenance) {
  const std::string title = fmt::format("{} / {} / {}", info(c.op).name, c.variant, name(c.format));
  std::ostringstream body;
  Plots plots;
  body << "<h1>Certificate: " << html_escape(title) << "</h1>\n";
  body << fmt::format(
      "<p class=\"{}\"><strong>Verdict: {}</strong> under rule <code>{}</code>, {} curated and "
      "{} random cases{} (seed {}), {:.1f} s, ran on {}.</p>\n",
      c.holds ? "holds" : "fails", c.holds ? "holds" : "FAILS", html_escape(c.rule.str()),
      c.curated_run, c.random_run,
      c.case_files_run > 0 ? fmt::format(" and {} case files", c.case_files_run) : "", c.seed,
      c.seconds, html_escape(c.ran_on));

  body << "<h2>Error per output tensor</h2>\n<table>\n<tr><th>output</th><th>elements</th>"
          "<th>max ulp</th><th>mean ulp</th><th>p50 ulp</th><th>p99 ulp</th><th>p99.9 ulp</th>"
          "<th>max error / allowed</th><th>max normwise error (u)</th><th>below 1e-6 ulp</th>"
          "</tr>\n";
  for (const auto& t : c.tensors) {
    body << "<tr><td>" << html_escape(t.name) << "</td><td>" << t.elements << "</td><td>"
         << figure(t.max_ulp) << "</td><td>" << figure(t.mean_ulp) << "</td><td>"
         << figure(t.p50_ulp) << "</td><td>" << figure(t.p99_ulp) << "</td><td>"
         << figure(t.p999_ulp) << "</td><td>" << figure(t.max_ratio) << "</td><td>"
         << figure(t.max_normwise_u) << "</td><td>" << t.ulp_histogram.at(-1) << "</td></tr>\n";
  }
  body << fmt::format(
      "</table>\n<p>Over every judged element of the run; quantiles from a histogram of {} bins "
      "per decade, each at most {:.3g} times the exact quantile and never below it "
      "(docs/certificate.md).</p>\n",
      properties::kBinsPerDecade, std::pow(10.0, 1.0 / properties::kBinsPerDecade));

  if (!c.regime_cases.empty()) {
    body << "<h2>Numerical regimes</h2>\n<table>\n<tr><th>regime</th><th>cases</th></tr>\n";
    for (const auto& [regime, cases] : c.regime_cases)
      body << "<tr><td>" << html_escape(regime) << "</td><td>" << cases
           << (cases == 0 ? " (not reached)" : "") << "</td></tr>\n";
    body << "</table>\n<p>The judged cases that reached each regime the op declares "
            "(docs/design.md, \"Numerical regimes\").</p>\n";
  }

  std::string figures;
  int marks = 0;
  for (const auto& t : c.tensors) {
    std::string script =
        histogram_script(bins_of(t.ulp_histogram), "error (ulp)", t.name + ": ulp error", &marks);
    figures += plots.add("ulp-histogram-" + t.name, script, marks,
                         t.name + ": the ulp error of every judged element (log-log).");
    script = histogram_script(bins_of(t.ratio_histogram), "error / allowed",
                              t.name + ": error / allowed", &marks);
    figures += plots.add("ratio-histogram-" + t.name, script, marks,
                         t.name + ": each element's error against what the rule allows (" +
                             c.rule.str() + "): how tight the bound is; 1 is the limit.");
  }
  if (c.vs_torch_cases > 0) {
    std::vector<std::tuple<std::string, double, double>> rows;
    for (const auto& e : c.vs_torch) rows.push_back({e.name, e.kernel_max_ulp, e.torch_max_ulp});
    const std::string script = pair_bars_script(rows, c.variant, "PyTorch", "max error (ulp)",
                                                "largest error against the oracle", &marks);
    if (script.empty())
      figures +=
          "<p>No plot of the largest errors against PyTorch's: one is not finite (a NaN or an "
          "infinite output); the table gives them.</p>\n";
    figures += plots.add("vs-torch-max", script, marks,
                         fmt::format("The kernel's and PyTorch's largest error per output over "
                                     "the {} cases PyTorch ran on.",
                                     c.vs_torch_cases));
  }
  if (c.counted_cases > 0) {
    double counted = 0;
    for (const auto& [what, n] : c.counts)
      if (what == "float atomics") counted = n;
    const std::string script = pair_bars_script(
        {{"float atomics", counted, c.cost_atomics}}, "counted (emulator)", "cost function",
        "total over the cases", "atomics against the cost function", &marks);
    figures += plots.add(
        "atomics-total", script, marks,
        fmt::format("Float atomics counted by the emulator against the cost function's, over {} "
                    "cases.",
                    c.counted_cases));
  }
  if (!figures.empty()) body << "<div class=\"plots\">\n" << figures << "</div>\n";
  body << "<h2>Error growth, per element and per launch</h2>\n"
       << plot_data_figures(plots, c.plots, c.variant, c.role);
  body << no_plots_note(plots);

  if (!c.worst_token.empty()) {
    body << "<h2>Worst case</h2>\n<p>Error / allowed " << figure(c.worst_ratio)
         << ". reproduce: <code>moacert reproduce " << html_escape(c.worst_token)
         << "</code></p>\n";
  }
  if (!c.holds) {
    body << "<h2>Counterexample</h2>\n<p>" << html_escape(c.failure) << "</p>\n<pre>"
         << html_escape(c.failure_case) << "</pre>\n<table>\n<tr><th>tensor</th><th>index</th>"
         << "<th>exact</th><th>computed</th><th>ulps</th><th>allowed</th></tr>\n";
    for (const auto& e : c.failure_elements) {
      body << fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{:.9g}</td><td>{:.9g}</td><td>{:.3g}</td><td>{:.3g}</td>"
          "</tr>\n",
          html_escape(e.tensor), html_escape(e.index.str()), e.exact, e.computed, e.ulps,
          e.allowed);
    }
    body << "</table>\n";
  }
  if (c.vs_torch_cases > 0) {
    body << "<h2>Equivalence with PyTorch</h2>\n<table>\n<tr><th>output</th><th>kernel max ulp</th>"
            "<th>PyTorch max ulp</th><th>max |kernel - PyTorch| ulp</th></tr>\n";
    for (const auto& e : c.vs_torch) {
      body << "<tr><td>" << html_escape(e.name) << "</td><td>" << figure(e.kernel_max_ulp)
           << "</td><td>" << figure(e.torch_max_ulp) << "</td><td>" << figure(e.max_diff_ulp)
           << "</td></tr>\n";
    }
    body << "</table>\n";
  }
  if (c.counted_cases > 0) {
    body << "<h2>Counts</h2>\n<table>\n<tr><th>count</th><th>total</th></tr>\n";
    for (const auto& [what, n] : c.counts)
      body << "<tr><td>" << html_escape(what) << "</td><td>" << fmt::format("{:.0f}", n)
           << "</td></tr>\n";
    body << fmt::format("<tr><td>cost function's float atomics</td><td>{:.0f}</td></tr>\n",
                        c.cost_atomics)
         << "</table>\n";
  }
  body << "<p>Determinism: "
       << (c.determinism_checked ? (c.determinism_holds ? "checked, holds" : "checked, FAILS")
                                 : "not claimed by the variant, not checked")
       << ".</p>\n";
  body << provenance_table(provenance);
  body << "<p>moacert " << html_escape(build.version) << " (" << html_escape(build.flags)
       << ").</p>\n";

  Page page;
  page.plots = plots.count();
  page.no_plots = plots.why();
  page.html = fmt::format(kHead, html_escape("moacert: " + title), page.plots) + body.str() +
              kPlotCheckScript + "</body></html>\n";
  return page;
}

Page page_of(const std::string& title, const std::string& body, const Plots& plots) {
  Page page;
  page.plots = plots.count();
  page.no_plots = plots.why();
  page.html = fmt::format(kHead, html_escape(title), page.plots) + body + no_plots_note(plots) +
              kPlotCheckScript + "</body></html>\n";
  return page;
}

Page summary_html(const std::vector<properties::Certificate>& cs, const BuildInfo& build,
                  const Provenance& provenance) {
  const std::string op =
      cs.empty() ? std::string("no variant") : std::string(info(cs.front().op).name);
  std::ostringstream body;
  body << "<h1>Certificate: " << html_escape(op) << "</h1>\n<table>\n<tr><th>variant</th>"
       << "<th>format</th><th>verdict</th><th>cases</th><th>worst error / allowed</th></tr>\n";
  for (const auto& c : cs) {
    body << fmt::format(
        "<tr><td><a href=\"{}/report.html\">{}</a></td><td>{}</td><td class=\"{}\">{}</td>"
        "<td>{}</td><td>{:.3g}</td></tr>\n",
        html_escape(c.variant), html_escape(c.variant), name(c.format), c.holds ? "holds" : "fails",
        c.holds ? "holds" : "FAILS", c.curated_run + c.random_run + c.case_files_run,
        c.worst_ratio);
  }
  body << "</table>\n" << provenance_table(provenance);
  body << "<p>moacert " << html_escape(build.version) << " (" << html_escape(build.flags)
       << ").</p>\n";
  Page page;
  page.html = fmt::format(kHead, html_escape("moacert: " + op), 0) + body.str() + kPlotCheckScript +
              "</body></html>\n";
  return page;
}

Page report_page(const std::vector<TableRow>& rows,
                 const std::vector<nlohmann::json>& certificates) {
  std::ostringstream body;
  Plots plots;
  body << "<h1>Error bounds</h1>\n" << table_html(rows);
  for (const nlohmann::json& c : certificates) {
    const std::string title =
        fmt::format("{} / {} / {}", c["op"].get<std::string>(), c["variant"].get<std::string>(),
                    c["format"].get<std::string>());
    body << "<h2>" << html_escape(title) << "</h2>\n"
         << plot_data_figures(plots, plot_data_of(c), c["variant"].get<std::string>(), role_of(c));
  }
  body << no_plots_note(plots);
  Page page;
  page.plots = plots.count();
  page.no_plots = plots.why();
  page.html = fmt::format(kHead, "moacert: error bounds", page.plots) + body.str() +
              kPlotCheckScript + "</body></html>\n";
  return page;
}

}  // namespace moacert::reports
