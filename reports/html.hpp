// report.html: a certificate as one self-contained page (no network, no
// external script, style or font), its plots drawn by gnuplot and inlined
// as SVG, tables beside them (docs/design.md, "report.html").
#pragma once

#include <string>
#include <vector>

#include "results/results.hpp"
#include "reports/certificate.hpp"
#include "reports/provenance.hpp"
#include "reports/table.hpp"

namespace moacert::reports {

struct Page {
  std::string html;
  int plots = 0;         // SVG plots inlined
  std::string no_plots;  // why there are none, when gnuplot is missing or fails; else empty
};

Page to_html(const properties::Certificate& c, const BuildInfo& build,
             const Provenance& provenance);

// The summary of several variants: their verdicts, linked to each one's page.
Page summary_html(const std::vector<properties::Certificate>& cs, const BuildInfo& build,
                  const Provenance& provenance);

// `moacert report`'s page: the error-bound table, then each certificate's
// plots, drawn from its JSON alone (plot_data, reports/plot_data.hpp).
Page report_page(const std::vector<TableRow>& rows,
                 const std::vector<nlohmann::json>& certificates);

}  // namespace moacert::reports
