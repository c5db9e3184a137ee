// The certificate's plot data (properties::PlotData) as JSON, both ways
// (docs/certificate.md#plot-data): certify writes it, and `moacert report
// --from` draws its plots from what it reads back.
#pragma once

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "results/results.hpp"

namespace moacert::reports {

nlohmann::json plot_data_json(const properties::PlotData& d);

// The inverse of plot_data_json. A certificate without `plot_data` (written
// before it existed) has none: an empty PlotData. Throws
// std::invalid_argument naming the field that is malformed.
properties::PlotData plot_data_of(const nlohmann::json& certificate);

}  // namespace moacert::reports
