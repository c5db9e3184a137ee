// JUnit XML of a `certify` run, for CI dashboards (GitLab, Jenkins, GitHub):
// one test suite (the op), one test case per (variant, format) certified.
// A failed certification is a <failure> whose message carries the
// counterexample and the `reproduce:` line with its token.
#pragma once

#include <string>
#include <vector>

#include "results/results.hpp"
#include "reports/certificate.hpp"

namespace moacert::reports {

std::string to_junit(const std::vector<properties::Certificate>& cs, const BuildInfo& build);

// `text` as XML 1.0 character data or an attribute value: markup escaped,
// control characters XML cannot hold (all below 0x20 but tab, newline and
// carriage return) written as \xNN, bytes that are not UTF-8 as U+FFFD, so
// that whatever a plugin says keeps the document well-formed. In an
// attribute value (`attribute`) tabs and newlines are references too.
std::string xml_escape(const std::string& text, bool attribute = false);

}  // namespace moacert::reports
