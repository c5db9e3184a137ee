// Certificates: the canonical JSON and a Markdown rendering of a
// certification's results. Reads results, never kernels.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "properties/results.hpp"

namespace moacert::reports {

struct BuildInfo {
  std::string version;
  std::string flags;  // build type, compiler, options
};

nlohmann::json to_json(const properties::Certificate& c, const BuildInfo& build);
std::string to_markdown(const properties::Certificate& c, const BuildInfo& build);

// The summary of several variants' certificates (certify without
// --variant): each one's verdict and worst ratio, and the overall verdict.
nlohmann::json summary_json(const std::vector<properties::Certificate>& cs, const BuildInfo& build);
std::string summary_markdown(const std::vector<properties::Certificate>& cs,
                             const BuildInfo& build);

// Writes `text` to `path` atomically: a temporary file in the same folder,
// renamed over the target once complete. Throws std::runtime_error naming
// the path when it cannot.
void write_atomically(const std::filesystem::path& path, const std::string& text);

}  // namespace moacert::reports
