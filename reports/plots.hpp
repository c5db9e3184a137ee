// The plots of a report page, drawn by gnuplot and inlined as SVG figures
// (docs/design.md, "report.html"): the Plots collector, and the plots drawn
// from a certificate's plot data (properties::PlotData) — error against
// each extent with its fitted growth, the kernel's error against PyTorch's
// and against its a priori bound per element, and a counting backend's
// launches against the cost function — the same on certify's page and on
// `moacert report`'s, which reads them back from certificate.json.
#pragma once

#include <string>
#include <vector>

#include "results/results.hpp"

namespace moacert::reports {

// Gathers a page's plots; without gnuplot, none, and says why once. Each
// figure names its plot (data-plot) and the marks it must show at least
// (data-marks, the points it was given), which the page's script checks
// in the browser (tests/reports/browser_check.py).
class Plots {
 public:
  Plots();
  // `script` draws from its inline data; `marks` points of it must show.
  // An empty script or no marks: a plot with nothing to draw, no figure.
  std::string add(const std::string& name, const std::string& script, int marks,
                  const std::string& caption);
  int count() const { return count_; }
  const std::string& why() const { return why_; }

 private:
  bool available_;
  int count_ = 0;
  std::string why_;
};

// The figures drawn from `d` of a certificate of `variant` (of that role:
// Certificate::role), with the growth table and a line for each plot that
// cannot be drawn (too little spread, PyTorch absent, no bound, nothing
// counted).
std::string plot_data_figures(Plots& plots, const properties::PlotData& d,
                              const std::string& variant, const std::string& role);

// One bin of a histogram over a log axis: [lower, upper) and its count.
struct HistogramBin {
  double lower = 0, upper = 0, count = 0;
};

// A histogram as boxes over log axes; `what` labels the x axis and `marks`
// is set to the bins drawn. Empty when no bin holds anything (every value
// below the axis, all exact, say): a log axis cannot show them, and the
// tables count them.
std::string histogram_script(const std::vector<HistogramBin>& bins, const std::string& what,
                             const std::string& title, int* marks);

// The page's closing script: counts the plots a browser drew (body's
// data-plots-drawn) and names them (data-plots-drawn-names).
extern const char* const kPlotCheckScript;

}  // namespace moacert::reports
