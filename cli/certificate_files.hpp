// A certificate's files, as certify writes them and `moacert report` reuses
// them: DIR/certificate.json, certificate.md and report.html.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/registry.hpp"
#include "reports/certificate.hpp"
#include "reports/html.hpp"
#include "reports/provenance.hpp"
#include "results/results.hpp"

namespace moacert::cli {

reports::BuildInfo build_info();

// Writes a report page; a page without its plots (no gnuplot) is said on
// stderr, and is no error: the tables hold every figure.
void write_page(const std::filesystem::path& path, const reports::Page& page);

// A certificate's three files as text: what certify writes, and what a
// rank of `moacert report` sends the root to write.
struct CertificateFiles {
  nlohmann::json json;
  std::string markdown;
  reports::Page page;
};
// `simt_counters` (the emulator's counters as JSON text, or empty) joins
// the certificate, and so does the `variant`'s envelope when it declares
// one (plugin ABI 2: it narrows some axis or option, or runs on cuda),
// and what its envelope and its reach (Variant::reach) exclude.
CertificateFiles render_certificate(const properties::Certificate& cert,
                                    const std::string& simt_counters,
                                    const kernels::Variant& variant,
                                    const reports::Provenance& provenance);
// Writes them into `dir`, each atomically; says on stderr when report.html
// has no plots.
void write_certificate_files(const std::filesystem::path& dir, const CertificateFiles& files);

// Both: writes `cert` into `dir` and returns its JSON.
nlohmann::json write_certificate(const std::filesystem::path& dir,
                                 const properties::Certificate& cert,
                                 const std::string& simt_counters, const kernels::Variant& variant,
                                 const reports::Provenance& provenance);

}  // namespace moacert::cli
