// report.html: a certificate as one self-contained page (no network, no
// external script, style or font), its plots drawn by gnuplot and inlined
// as SVG, tables beside them (docs/design.md, "report.html").
#pragma once

#include <string>
#include <vector>

#include "reports/certificate.hpp"
#include "reports/plots.hpp"
#include "reports/provenance.hpp"
#include "reports/table.hpp"
#include "results/results.hpp"

namespace moacert::reports {

struct Page {
  std::string html;
  int plots = 0;         // SVG plots inlined
  std::string no_plots;  // why there are none, when gnuplot is missing or fails; else empty
};

Page to_html(const properties::Certificate& c, const BuildInfo& build,
             const Provenance& provenance);

// A page of `body` under `title`, in the style every report page shares,
// with its plots' count, a note when it has none for want of gnuplot, and
// the script that checks them in a browser.
Page page_of(const std::string& title, const std::string& body, const Plots& plots);

// The summary of several variants: their verdicts, linked to each one's page.
Page summary_html(const std::vector<properties::Certificate>& cs, const BuildInfo& build,
                  const Provenance& provenance);

// `moacert report`'s page: the error-bound table, then each certificate's
// plots, drawn from its JSON alone (plot_data, reports/plot_data.hpp).
Page report_page(const std::vector<TableRow>& rows,
                 const std::vector<nlohmann::json>& certificates);

}  // namespace moacert::reports
