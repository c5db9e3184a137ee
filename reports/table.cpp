#include "reports/table.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/core.h>

#include "reports/certificate.hpp"
#include "reports/html_escape.hpp"
#include "reports/json_figure.hpp"
#include "reports/plot_data.hpp"

namespace moacert::reports {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

[[noreturn]] void bad(const fs::path& file, const std::string& what) {
  throw BadCertificate(file.string() + ": " + what);
}

json parse_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) bad(file, "cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::parse_error& e) {
    bad(file, std::string("not JSON: ") + e.what());
  }
}

// A certificate or summary of a schema version this moacert reads.
void check_version(const fs::path& file, const json& c) {
  if (!c.is_object()) bad(file, "not a certificate (not a JSON object)");
  if (!c.contains("schema") || !c["schema"].is_number_integer())
    bad(file, "no \"schema\" version (written before schema 1?)");
  const int version = c["schema"].get<int>();
  if (version > kSchemaVersion)
    bad(file, fmt::format("schema version {} is newer than this moacert reads ({})", version,
                          kSchemaVersion));
}

// What a row needs, checked before anything is written.
void check_fields(const fs::path& file, const json& c) {
  check_version(file, c);
  for (const char* key : {"op", "variant", "format", "verdict"})
    if (!c.contains(key) || !c[key].is_string())
      bad(file, fmt::format("field \"{}\" missing or not a string", key));
  if (!c.contains("tensors") || !c["tensors"].is_object())
    bad(file, "field \"tensors\" missing or not an object");
  for (const auto& [name, t] : c["tensors"].items()) {
    for (const char* key : {"max_ulp", "mean_ulp", "p99_ulp", "max_error_to_allowed"})
      if (!t.is_object() || !t.contains(key) || !is_figure(t[key]))
        bad(file, fmt::format("tensors.{}.{} missing or not a number", name, key));
  }
  try {  // the plots' data, which the page draws from
    plot_data_of(c);
  } catch (const std::invalid_argument& e) {
    bad(file, e.what());
  }
}

std::string cell(double x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return fmt::format("{:.3g}", x);
}

std::string vs_torch_cell(const TableRow& r) {
  return r.vs_torch < 0 ? "n/a" : cell(r.vs_torch);
}

std::string latex_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '_':
      case '#':
      case '%':
      case '&':
      case '$':
      case '{':
      case '}':
        out += '\\';
        out += ch;
        break;
      case '\\':
        out += "\\textbackslash{}";
        break;
      case '~':
        out += "\\textasciitilde{}";
        break;
      case '^':
        out += "\\textasciicircum{}";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

// The columns, once for every rendering.
std::vector<std::string> cells(const TableRow& r) {
  return {r.op,
          r.variant,
          r.format,
          r.output,
          cell(r.max_ulp),
          cell(r.mean_ulp),
          cell(r.p99_ulp),
          cell(r.max_error_to_allowed),
          vs_torch_cell(r),
          r.verdict};
}
const std::vector<std::string> kHeader = {"op",
                                          "variant",
                                          "format",
                                          "output",
                                          "max ulp",
                                          "mean ulp",
                                          "p99 ulp",
                                          "max error / allowed",
                                          "error / PyTorch's",
                                          "verdict"};

}  // namespace

std::vector<json> read_certificates(const fs::path& dir, std::vector<fs::path>* files) {
  const fs::path file = dir / "certificate.json";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) throw BadCertificate(dir.string() + ": no certificate.json");
  json top = parse_file(file);
  if (top.is_object() && top.contains("variants")) {  // a summary: its variants' certificates
    check_version(file, top);
    if (!top["variants"].is_array()) bad(file, "field \"variants\" is not a list");
    std::vector<json> out;
    for (const json& v : top["variants"]) {
      if (!v.is_object() || !v.contains("certificate") || !v["certificate"].is_string())
        bad(file, "a variant without its \"certificate\" path");
      const fs::path sub = dir / v["certificate"].get<std::string>();
      if (!fs::is_regular_file(sub, ec)) bad(file, "lists " + sub.string() + ", which is absent");
      json c = parse_file(sub);
      check_fields(sub, c);
      out.push_back(std::move(c));
      if (files) files->push_back(sub);
    }
    return out;
  }
  check_fields(file, top);
  if (files) files->push_back(file);
  return {top};
}

std::string role_of(const json& c) {
  if (c.contains("role")) return c["role"].get<std::string>();
  return c["variant"] == "torch" ? "torch" : "onf";
}

std::vector<TableRow> rows_of(const json& c) {
  std::vector<TableRow> rows;
  for (const auto& [name, t] : c["tensors"].items()) {
    TableRow r{c["op"], c["variant"], c["format"], name};
    r.max_ulp = figure_of(t["max_ulp"]);
    r.mean_ulp = figure_of(t["mean_ulp"]);
    r.p99_ulp = figure_of(t["p99_ulp"]);
    r.max_error_to_allowed = figure_of(t["max_error_to_allowed"]);
    if (role_of(c) == "torch") r.vs_torch = 1;
    const json* eq = c.contains("vs_torch") ? &c["vs_torch"] : nullptr;
    if (eq && eq->contains("tensors") && (*eq)["tensors"].contains(name)) {
      const json& e = (*eq)["tensors"][name];
      const double kernel = figure_of(e.value("kernel_max_ulp", json(NAN)));
      const double torch = figure_of(e.value("torch_max_ulp", json(NAN)));
      r.vs_torch = torch > 0 ? kernel / torch : kernel == 0 ? 1 : INFINITY;
    }
    r.verdict = c["verdict"];
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string table_markdown(const std::vector<TableRow>& rows) {
  std::ostringstream md;
  md << "# Error bounds\n\n|";
  for (const auto& h : kHeader) md << " " << h << " |";
  md << "\n|";
  for (std::size_t i = 0; i < kHeader.size(); ++i) md << (i < 4 || i == 9 ? " --- |" : " ---: |");
  md << "\n";
  for (const auto& r : rows) {
    md << "|";
    for (const auto& c : cells(r)) md << " " << c << " |";
    md << "\n";
  }
  md << "\nulps of the format at the exact value; p99 over every judged element; error / allowed "
        "against each certificate's rule; error / PyTorch's: the kernel's largest error over "
        "PyTorch's on the same cases (n/a: PyTorch did not run).\n";
  return md.str();
}

std::string table_latex(const std::vector<TableRow>& rows) {
  std::ostringstream tex;
  tex << "% moacert report: the error-bound table (needs \\usepackage{booktabs}).\n"
      << "\\begin{tabular}{llll" << std::string(5, 'r') << "l}\n\\toprule\n";
  for (std::size_t i = 0; i < kHeader.size(); ++i)
    tex << (i ? " & " : "") << latex_escape(kHeader[i]);
  tex << " \\\\\n\\midrule\n";
  for (const auto& r : rows) {
    const auto cs = cells(r);
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const std::string& c = cs[i];
      tex << (i ? " & " : "")
          << (c == "inf" ? "$\\infty$"
              : i < 4    ? "\\texttt{" + latex_escape(c) + "}"
                         : latex_escape(c));
    }
    tex << " \\\\\n";
  }
  tex << "\\bottomrule\n\\end{tabular}\n";
  return tex.str();
}

std::string table_html(const std::vector<TableRow>& rows) {
  std::ostringstream h;
  h << "<table class=\"bounds\">\n<tr>";
  for (const auto& c : kHeader) h << "<th>" << html_escape(c) << "</th>";
  h << "</tr>\n";
  for (const auto& r : rows) {
    h << "<tr" << (r.verdict == "holds" ? "" : " class=\"fails\"") << ">";
    for (const auto& c : cells(r)) h << "<td>" << html_escape(c) << "</td>";
    h << "</tr>\n";
  }
  h << "</table>\n";
  return h.str();
}

}  // namespace moacert::reports
