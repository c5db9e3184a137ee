// The error-bound table a paper prints (`moacert report`): one row per op,
// variant, format and output tensor, read back from certificate JSON files
// (docs/certificate.md), as Markdown, LaTeX booktabs and HTML.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace moacert::reports {

struct TableRow {
  std::string op, variant, format, output;
  double max_ulp = 0, mean_ulp = 0, p99_ulp = 0, max_error_to_allowed = 0;
  double vs_torch = -1;  // kernel max ulp / PyTorch's max ulp; < 0: PyTorch did not run
  std::string verdict;
};

// A certificate file a report cannot use: the message names the file and
// what is wrong with it.
class BadCertificate : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The certificates in `dir`: its certificate.json, or for a summary the
// certificate of each variant it lists. Throws BadCertificate for a folder
// without certificate.json, a file that is not JSON, a schema newer than
// kSchemaVersion, or a field missing or of the wrong type.
// `files`, when given, gets each one's path, in the same order.
std::vector<nlohmann::json> read_certificates(const std::filesystem::path& dir,
                                              std::vector<std::filesystem::path>* files = nullptr);

// The rows of one certificate (validated by read_certificates).
std::vector<TableRow> rows_of(const nlohmann::json& certificate);

// A certificate's variant role ("dnf", "onf", "torch", "plugin"). One
// written before certificates carried it is read by the one name a role
// could be told from then: PyTorch's variant was "torch".
std::string role_of(const nlohmann::json& certificate);

std::string table_markdown(const std::vector<TableRow>& rows);
std::string table_latex(const std::vector<TableRow>& rows);  // a booktabs table
std::string table_html(const std::vector<TableRow>& rows);   // a <table>, for report_page

}  // namespace moacert::reports
