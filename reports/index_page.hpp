// One page for a whole run of certificates (scripts/certify-all.sh writes
// it through `moacert report --index`; docs/design.md, "report"): every
// op × variant × format with its verdict, worst error / allowed, cases,
// time and a small histogram of every judged element's error / allowed,
// each linked to its certificate, as index.html and index.md. Drawn from
// the certificates' JSON alone, as `moacert report --from` draws its table.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/html.hpp"

namespace moacert::reports {

struct IndexEntry {
  nlohmann::json certificate;  // as read_certificates checked it
  std::string folder;          // the certificate's folder, relative to the index's
};

Page index_html(const std::vector<IndexEntry>& entries);
std::string index_markdown(const std::vector<IndexEntry>& entries);

}  // namespace moacert::reports
