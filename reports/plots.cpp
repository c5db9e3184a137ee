#include "reports/plots.hpp"

#include <cmath>
#include <sstream>
#include <utility>
#include <vector>

#include <fmt/core.h>

#include "reports/gnuplot.hpp"
#include "reports/growth_fit.hpp"
#include "reports/html_escape.hpp"

namespace moacert::reports {

Plots::Plots() : available_(gnuplot_available()) {
  if (!available_) why_ = "gnuplot is not on the PATH";
}

std::string Plots::add(const std::string& name, const std::string& script, int marks,
                       const std::string& caption) {
  if (!available_ || script.empty() || marks <= 0) return "";
  std::string why;
  const auto svg = gnuplot_svg(script, &why);
  if (!svg) {
    if (why_.empty()) why_ = why;
    return "";
  }
  ++count_;
  return fmt::format(
      "<figure data-plot=\"{}\" data-marks=\"{}\">{}<figcaption>{}</figcaption>"
      "</figure>\n",
      html_escape(name), marks, *svg, html_escape(caption));
}

std::string histogram_script(const std::vector<HistogramBin>& bins, const std::string& what,
                             const std::string& title, int* marks) {
  std::ostringstream s;
  s << "$d << EOD\n";
  *marks = 0;
  for (const HistogramBin& b : bins) {
    if (b.count == 0) continue;
    ++*marks;
    s << fmt::format("{:.17g} {:.17g} {:.17g}\n", b.lower, b.upper, b.count);
  }
  if (*marks == 0) return "";
  s << "EOD\n"
    << "set title '" << title << "' noenhanced\nset logscale x\nset logscale y\n"
    << "set xlabel '" << what << "'\nset ylabel 'elements'\nset style fill solid 0.6\n"
    << "set format x '10^{%L}'\nset grid\nset yrange [0.5:*]\n"  // a bin of 1 shows
    << "plot $d using (sqrt($1*$2)):3:($2-$1) with boxes lc rgb '#3060a0' notitle\n";
  return s.str();
}

const char* const kPlotCheckScript = R"(<script>
// Counts the plots a browser actually drew: a non-empty box whose data
// series (gnuplot's gnuplot_plot_* groups) show at least the marks the
// figure was given (data-marks; a legend adds marks, never removes them).
const figures = [...document.querySelectorAll('figure[data-plot]')];
const drawn = figures.filter(f => {
  const s = f.querySelector('svg');
  if (!s) return false;
  const r = s.getBoundingClientRect();
  if (!(r.width > 0 && r.height > 0)) return false;
  const marks = [...s.querySelectorAll('g[id^="gnuplot_plot_"] :is(path, use, rect, polygon, polyline)')]
    .filter(m => { const b = m.getBoundingClientRect(); return b.width > 0 || b.height > 0; });
  return marks.length >= Number(f.dataset.marks) && Number(f.dataset.marks) > 0;
});
document.body.dataset.plotsDrawn = String(drawn.length);
document.body.dataset.plotsDrawnNames = drawn.map(f => f.dataset.plot).join(' ');
</script>
)";

namespace {

using properties::PlotData;
using Points = std::vector<std::pair<double, double>>;

struct Series {
  std::string title;
  Points xy;
};

// Text as a gnuplot single-quoted string, whose only escape is '' for '.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char ch : text) out += ch == '\'' ? std::string("''") : std::string(1, ch);
  return out + "'";
}

bool drawable(double x) {
  return x > 0 && std::isfinite(x);
}

// Points of every series on log-log axes, then `extra` plot terms (the
// diagonal, fitted lines); empty when no series has a point.
std::string scatter_script(const std::string& title, const std::string& xlabel,
                           const std::string& ylabel, const std::vector<Series>& series,
                           const std::string& extra, int* marks) {
  std::ostringstream s, plot;
  *marks = 0;
  int block = 0;
  static const char* const colours[] = {"#3060a0", "#c06020", "#208040", "#a03080", "#707070"};
  for (const Series& x : series) {
    if (x.xy.empty()) continue;
    s << "$d" << block << " << EOD\n";
    for (const auto& [a, b] : x.xy) s << fmt::format("{:.17g} {:.17g}\n", a, b);
    s << "EOD\n";
    plot << (block ? ", " : "") << "$d" << block << " using 1:2 with points pt 7 ps 0.5 lc rgb '"
         << colours[block % 5] << "' title " << quoted(x.title);
    *marks += int(x.xy.size());
    ++block;
  }
  if (block == 0) return "";
  s << "set title " << quoted(title) << " noenhanced\nset logscale x\nset logscale y\n"
    << "set xlabel " << quoted(xlabel) << " noenhanced\nset ylabel " << quoted(ylabel)
    << " noenhanced\n"
    << "set format x '10^{%L}'\nset format y '10^{%L}'\nset grid\nset key top left noenhanced\n"
    << "set samples 200\nplot " << plot.str() << extra << "\n";
  return s.str();
}

const char* const kDiagonal = ", x with lines dt 2 lc rgb '#000000' title 'y = x'";

// The lengths and widths of an op: its dimensions but the batch and the
// heads, which multiply independent rows and enter no reduction.
bool growth_axis(const std::string& dim) {
  return dim != "B" && dim != "H" && dim != "Hkv";
}

std::string growth_figures(Plots& plots, const PlotData& d, std::string* table,
                           std::string* notes) {
  std::string figures;
  for (std::size_t k = 0; k < d.dims.size(); ++k) {
    const std::string& axis = d.dims[k];
    if (!growth_axis(axis)) continue;
    std::vector<Series> series;
    std::string lines;
    int fitted = 0, most_distinct = 0;
    for (std::size_t t = 0; t < d.tensors.size(); ++t) {
      Points xy;
      for (const auto& c : d.cases)
        if (k < c.extents.size() && t < c.max_ulp.size())
          xy.push_back({double(c.extents[k]), c.max_ulp[t]});
      const GrowthFit f = fit_growth(xy);
      most_distinct = std::max(most_distinct, f.distinct);
      if (!f.fitted) {
        *table += fmt::format(
            "<tr><td>{}</td><td>{}</td><td colspan=\"2\">too little spread for a fit: {} "
            "distinct {}</td><td>{}</td></tr>\n",
            html_escape(axis), html_escape(d.tensors[t]), f.distinct, html_escape(axis), f.points);
        continue;
      }
      ++fitted;
      Points drawn;
      for (const auto& [x, y] : xy)
        if (x >= 1 && drawable(y)) drawn.push_back({x, y});
      series.push_back({fmt::format("{}: p = {:.2f}", d.tensors[t], f.p), drawn});
      lines +=
          fmt::format(", exp({:.17g}) * x**{:.17g} with lines lc rgb '#808080' notitle", f.a, f.p);
      *table += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{:.3f}</td><td>{:.3f}</td><td>{}</td>"
          "</tr>\n",
          html_escape(axis), html_escape(d.tensors[t]), f.p, f.r2, f.points);
    }
    if (fitted == 0) {
      *notes += fmt::format(
          "<p>Error against {}: too little spread for a fit ({} distinct {} at most among the "
          "cases with a nonzero error, {} needed); <code>certify --shape {}=LO..HI</code> spreads "
          "it.</p>\n",
          html_escape(axis), most_distinct, html_escape(axis), kMinDistinctExtents,
          html_escape(axis));
      continue;
    }
    int marks = 0;
    const std::string script = scatter_script("largest ulp error of a case against " + axis, axis,
                                              "max error (ulp)", series, lines, &marks);
    figures += plots.add(
        "growth-" + axis, script, marks,
        fmt::format("Each case's largest ulp error against {} ({} of the run's {} cases kept), "
                    "and the least-squares fit log(error) = a + p log({}) over the cases with a "
                    "nonzero error: p is the growth exponent. The other extents vary too unless "
                    "certify --shape fixes them.",
                    axis, d.cases.size(), d.cases_seen, axis));
  }
  return figures;
}

// Element pairs of every tensor: (x, y) from `pick`, each coordinate
// drawable; `left_out` counts the others (a zero error, no value).
template <class Pick>
std::vector<Series> element_series(const PlotData& d, Pick pick, int* left_out) {
  std::vector<Series> out;
  *left_out = 0;
  for (std::size_t t = 0; t < d.tensors.size() && t < d.elements.size(); ++t) {
    Series s{d.tensors[t], {}};
    for (const auto& e : d.elements[t]) {
      const auto [x, y] = pick(e);
      if (drawable(x) && drawable(y))
        s.xy.push_back({x, y});
      else
        ++*left_out;
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::string elements_kept(const PlotData& d) {
  std::int64_t kept = 0, seen = 0;
  for (std::size_t t = 0; t < d.elements.size(); ++t) {
    kept += std::int64_t(d.elements[t].size());
    seen += d.elements_seen[t];
  }
  return fmt::format(
      "{} of the run's {} judged elements: per output the worst and a reservoir of "
      "the rest",
      kept, seen);
}

bool any_element(const PlotData& d, bool (*has)(const properties::ElementPoint&)) {
  for (const auto& tensor : d.elements)
    for (const auto& e : tensor)
      if (has(e)) return true;
  return false;
}

}  // namespace

std::string plot_data_figures(Plots& plots, const PlotData& d, const std::string& variant,
                              const std::string& role) {
  std::string table, notes;
  std::string figures = growth_figures(plots, d, &table, &notes);

  int left_out = 0, marks = 0;
  if (any_element(d, [](const properties::ElementPoint& e) { return !std::isnan(e.torch_ulps); })) {
    const auto series = element_series(
        d,
        [](const properties::ElementPoint& e) {
          return std::pair{e.torch_ulps, e.ulps};
        },
        &left_out);
    const std::string script =
        scatter_script("the kernel's error against PyTorch's, per element", "PyTorch (ulp)",
                       variant + " (ulp)", series, kDiagonal, &marks);
    figures += plots.add(
        "vs-torch", script, marks,
        fmt::format("Per element, {}'s ulp error against PyTorch's on the same element ({}); "
                    "above the diagonal the kernel errs more. {} with a zero error are off the "
                    "log axes.",
                    variant, elements_kept(d), left_out));
  } else if (role != "torch") {
    notes += "<p>No per-element comparison with PyTorch: it did not run beside this variant.</p>\n";
  }
  if (any_element(d, [](const properties::ElementPoint& e) { return !std::isnan(e.bound); })) {
    const auto series = element_series(
        d,
        [](const properties::ElementPoint& e) {
          return std::pair{e.bound, e.abs_error};
        },
        &left_out);
    const std::string script =
        scatter_script("error against the a priori bound, per element", "a priori bound",
                       "absolute error", series, kDiagonal, &marks);
    figures += plots.add(
        "vs-bound", script, marks,
        fmt::format("Per element, the absolute error against its a priori bound "
                    "(docs/bounds.md; {}): how tight the bound is; the bound holds below the "
                    "diagonal. {} with a zero error are off the log axes.",
                    elements_kept(d), left_out));
  } else {
    notes += "<p>No error against the a priori bound: the rule computed none (max-ulp).</p>\n";
  }
  if (d.launches_seen > 0) {
    Series atomics{"float atomics", {}}, bytes{"global bytes", {}};
    int differ = 0;
    for (const auto& l : d.launches) {
      if (drawable(l.atomics) && drawable(l.model_atomics))
        atomics.xy.push_back({l.model_atomics, l.atomics});
      if (drawable(l.bytes) && drawable(l.model_bytes))
        bytes.xy.push_back({l.model_bytes, l.bytes});
      differ += l.atomics != l.model_atomics || l.bytes != l.model_bytes;
    }
    const std::string script =
        scatter_script("launches: counted against the cost function", "cost function",
                       "counted (emulator)", {atomics, bytes}, kDiagonal, &marks);
    figures += plots.add(
        "launches", script, marks,
        fmt::format("Per launch, the float atomics and the global bytes (loads and stores) the "
                    "emulator counted against the cost function's ({} of the run's {} launches: "
                    "the most different and a reservoir); {} of them differ. Zero counts are off "
                    "the log axes.",
                    d.launches.size(), d.launches_seen, differ));
  }
  std::string out;
  if (!figures.empty()) out += "<div class=\"plots\">\n" + figures + "</div>\n";
  if (!table.empty())
    out +=
        "<table>\n<tr><th>extent</th><th>output</th><th>growth exponent p</th><th>R² of the "
        "fit</th><th>cases</th></tr>\n" +
        table + "</table>\n";
  return out + notes;
}

}  // namespace moacert::reports
