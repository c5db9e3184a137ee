#include "reports/index_page.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <utility>

#include <fmt/core.h>

#include "reports/html_escape.hpp"
#include "reports/json_figure.hpp"
#include "reports/plots.hpp"

namespace moacert::reports {

namespace {

using nlohmann::json;

// What a row of the index shows of one certificate.
struct Row {
  std::string op, variant, format, folder, why, token;
  bool holds = false;
  long cases = 0;
  double worst = 0, seconds = 0;
  std::vector<HistogramBin> bins;  // error / allowed, summed over the outputs
  double below = 0, above = 0;     // below and above the histogram's axis
};

double number_or(const json& j, const char* key, double otherwise) {
  return j.is_object() && j.contains(key) && is_figure(j[key]) ? figure_of(j[key]) : otherwise;
}

// Every output's error / allowed histogram as one: the outputs share the
// axis (docs/certificate.md#statistics), so equal edges add up.
void sum_histograms(const json& tensors, Row& r) {
  std::map<std::pair<double, double>, double> bins;
  for (const auto& [name, t] : tensors.items()) {
    if (!t.contains("error_to_allowed_histogram")) continue;  // written before it existed
    const json& h = t["error_to_allowed_histogram"];
    r.below += number_or(h, "below_lowest", 0);
    r.above += number_or(h, "above_highest", 0);
    for (const json& b : h.value("bins", json::array()))
      if (b.is_array() && b.size() == 3)
        bins[{figure_of(b[0]), figure_of(b[1])}] += figure_of(b[2]);
  }
  for (const auto& [edges, count] : bins) r.bins.push_back({edges.first, edges.second, count});
}

Row row_of(const IndexEntry& e) {
  const json& c = e.certificate;
  Row r{c["op"], c["variant"], c["format"], e.folder};
  r.holds = c["verdict"] == "holds";
  double worst = 0;
  for (const auto& [name, t] : c["tensors"].items())
    worst = std::max(worst, figure_of(t["max_error_to_allowed"]));
  r.worst =
      c.contains("worst_case") ? number_or(c["worst_case"], "error_to_allowed", worst) : worst;
  r.token = c.contains("worst_case") ? c["worst_case"].value("token", "") : "";
  for (const char* kind : {"curated", "random", "case_files"})
    r.cases += long(number_or(c.value("cases", json::object()), kind, 0));
  r.seconds = number_or(c, "seconds", 0);
  if (c.contains("counterexample")) r.why = c["counterexample"].value("why", "");
  sum_histograms(c["tensors"], r);
  return r;
}

std::vector<Row> rows_of(const std::vector<IndexEntry>& entries) {
  std::vector<Row> rows;
  for (const IndexEntry& e : entries) rows.push_back(row_of(e));
  return rows;
}

std::string figure(double x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return fmt::format("{:.3g}", x);
}

// The run in one sentence: how many variants hold, the verdict, the time.
std::string verdict_line(const std::vector<Row>& rows, bool markdown) {
  long failing = 0;
  double seconds = 0;
  for (const Row& r : rows) {
    failing += !r.holds;
    seconds += r.seconds;
  }
  const std::string verdict = failing == 0 ? "holds" : "FAILS";
  return fmt::format("{}Verdict: {}{}: {} certificates, {} hold, {} fail; {:.1f} s in all.",
                     markdown ? "**" : "", verdict, markdown ? "**" : "", rows.size(),
                     long(rows.size()) - failing, failing, seconds);
}

// A histogram in eight characters, one per decade of error / allowed:
// at most 1e-6 (exact included), each decade up to 1, then above 1 (past
// the limit); a character's height the count's share on a log scale.
std::string sparkline(const Row& r) {
  static const char* const kLevels[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  double decade[8] = {r.below, 0, 0, 0, 0, 0, 0, 0};
  for (const HistogramBin& b : r.bins) {
    const double mid = std::sqrt(b.lower * b.upper);
    const int k = mid > 1 ? 7 : std::clamp(int(std::ceil(std::log10(mid))) + 6, 0, 6);
    decade[k] += b.count;
  }
  decade[7] += r.above;
  const double top = *std::max_element(std::begin(decade), std::end(decade));
  std::string out;
  for (double n : decade) {
    const int level = top > 0 && n > 0 ? 1 + int(7 * std::log1p(n) / std::log1p(top)) : 0;
    out += kLevels[std::min(level, 8)];
  }
  return out;
}

// A figure name the browser check reads back: no blanks.
std::string plot_name(const Row& r) {
  std::string name = "hist-" + r.op + "-" + r.variant + "-" + r.format;
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

std::string histogram_cell(Plots& plots, const Row& r) {
  int marks = 0;
  const std::string script = histogram_script(r.bins, "error / allowed", "", &marks);
  if (script.empty()) return "every element below 1e-6 of its allowance";
  // A small plot: the terminal set again after the one gnuplot_svg sets.
  const std::string figure =
      plots.add(plot_name(r), "set terminal svg size 480,180 dynamic font 'sans,10'\n" + script,
                marks, r.op + " " + r.variant + ": error / allowed of every judged element");
  return figure.empty() ? "(no plot)" : figure;
}

}  // namespace

Page index_html(const std::vector<IndexEntry>& entries) {
  const std::vector<Row> rows = rows_of(entries);
  Plots plots;
  std::ostringstream body;
  const bool holds = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.holds; });
  body << "<h1>Certificates of the run</h1>\n<p class=\"" << (holds ? "holds" : "fails")
       << "\"><strong>" << html_escape(verdict_line(rows, false)) << "</strong></p>\n"
       << "<table class=\"index\">\n<tr><th>op</th><th>variant</th><th>format</th><th>verdict</th>"
          "<th>cases</th><th>worst error / allowed</th><th>time (s)</th>"
          "<th>error / allowed, every element</th><th>certificate</th></tr>\n";
  for (const Row& r : rows) {
    const std::string dir = html_escape(r.folder);
    body << fmt::format(
        "<tr data-verdict=\"{}\"><td>{}</td><td><a href=\"{}/report.html\">{}</a></td><td>{}</td>"
        "<td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{:.1f}</td><td>{}</td>"
        "<td><a href=\"{}/certificate.md\">md</a> <a href=\"{}/certificate.json\">json</a></td>"
        "</tr>\n",
        r.holds ? "holds" : "fails", html_escape(r.op), dir, html_escape(r.variant),
        html_escape(r.format), r.holds ? "holds" : "fails", r.holds ? "holds" : "FAILS", r.cases,
        figure(r.worst), r.seconds, histogram_cell(plots, r), dir, dir);
  }
  body << "</table>\n<p>Worst error / allowed: the largest over the certificate's cases (1 is "
          "the rule's limit; inf where a case was not judged element by element). The histogram "
          "counts every judged element of every output on log axes.</p>\n";
  if (!holds) {
    body << "<h2>Failures</h2>\n<ul>\n";
    for (const Row& r : rows)
      if (!r.holds)
        body << "<li class=\"fails\">" << html_escape(r.op + " " + r.variant + ": " + r.why)
             << (r.token.empty() ? ""
                                 : " — <code>moacert reproduce " + html_escape(r.token) + "</code>")
             << "</li>\n";
    body << "</ul>\n";
  }
  return page_of("moacert: certificates of the run", body.str(), plots);
}

std::string index_markdown(const std::vector<IndexEntry>& entries) {
  const std::vector<Row> rows = rows_of(entries);
  std::ostringstream md;
  md << "# Certificates of the run\n\n"
     << verdict_line(rows, true) << "\n\n"
     << "| op | variant | format | verdict | cases | worst error / allowed | time (s) | error / "
        "allowed |\n| --- | --- | --- | --- | ---: | ---: | ---: | --- |\n";
  for (const Row& r : rows)
    md << fmt::format("| {} | [{}]({}/certificate.md) | {} | {} | {} | {} | {:.1f} | `{}` |\n",
                      r.op, r.variant, r.folder, r.format, r.holds ? "holds" : "FAILS", r.cases,
                      figure(r.worst), r.seconds, sparkline(r));
  md << "\nerror / allowed: every judged element, one character per decade, from at most 1e-6 "
        "(exact included) through each decade to 1, then above 1 (past the rule's limit); "
        "heights on a log scale of the counts.\n";
  bool failures = false;
  for (const Row& r : rows) {
    if (r.holds) continue;
    if (!failures) md << "\n## Failures\n\n";
    failures = true;
    md << "- " << r.op << " " << r.variant << ": " << r.why
       << (r.token.empty() ? "" : " — `moacert reproduce " + r.token + "`") << "\n";
  }
  return md.str();
}

}  // namespace moacert::reports
