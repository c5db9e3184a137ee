// A certificate's files, as certify writes them and `moacert report` reuses
// them: DIR/certificate.json, certificate.md and report.html.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "properties/results.hpp"
#include "reports/certificate.hpp"
#include "reports/html.hpp"
#include "reports/provenance.hpp"

namespace moacert::cli {

reports::BuildInfo build_info();

// Writes a report page; a page without its plots (no gnuplot) is said on
// stderr, and is no error: the tables hold every figure.
void write_page(const std::filesystem::path& path, const reports::Page& page);

// Writes `cert` into `dir` and returns its JSON; `simt_counters` (the
// emulator's counters as JSON text, or empty) joins it. Says on stderr when
// report.html has no plots.
nlohmann::json write_certificate(const std::filesystem::path& dir,
                                 const properties::Certificate& cert,
                                 const std::string& simt_counters,
                                 const reports::Provenance& provenance);

}  // namespace moacert::cli
