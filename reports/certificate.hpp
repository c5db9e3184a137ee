// Certificates: the canonical JSON and a Markdown rendering of a
// certification's results. Reads results, never kernels.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/results.hpp"
#include "reports/provenance.hpp"

namespace moacert::reports {

// The version of the certificate's JSON schema (docs/certificate.md,
// docs/certificate.schema.json): every certificate states it as "schema".
// A reader refuses a newer one; fields are only ever added within a version.
constexpr int kSchemaVersion = 1;

struct BuildInfo {
  std::string version;
  std::string flags;  // build type, compiler, options
};

nlohmann::json to_json(const properties::Certificate& c, const BuildInfo& build,
                       const Provenance& provenance);
std::string to_markdown(const properties::Certificate& c, const BuildInfo& build,
                        const Provenance& provenance);

// The summary of several variants' certificates (certify without
// --variant): each one's verdict and worst ratio, and the overall verdict.
nlohmann::json summary_json(const std::vector<properties::Certificate>& cs, const BuildInfo& build,
                            const Provenance& provenance);
std::string summary_markdown(const std::vector<properties::Certificate>& cs, const BuildInfo& build,
                             const Provenance& provenance);

}  // namespace moacert::reports
