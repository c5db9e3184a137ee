// Case files (docs/design.md, "Case files"; schema in docs/case-files.md):
// reading a case from JSON, strictly, and writing cases and the oracle's
// answers in the same form.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "oracle/oracle.hpp"
#include "reference/case.hpp"

namespace moacert::oracle {

// A bad case file. The message starts with the JSON path of the offending
// field: `tensors.q.data[17]: "0x1.8pz" is not a hex float`.
class CaseError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The case a JSON document describes: dimensions derived from the tensor
// shapes (and, for block, params.heads and params.kv_heads), every tensor
// checked against them, data exactly representable in the dtype, each
// tensor in the layout its strides give (row-major without strides).
// Sizes over 2^31 elements are refused before anything is allocated.
Case read_case(const nlohmann::json& j);
// The same from a file; a file that is not JSON is a CaseError too.
Case read_case_file(const std::string& path);

// A case in the same form (strides written when the layout is not
// row-major); read_case(write_case(c)) holds the same values and layouts.
nlohmann::json write_case(const Case& c);

// The oracle's answer: each output's data correctly rounded to the dtype,
// "exact" the decimal values to Options::exact_digits digits (absent with 0),
// null for an element not evaluated (Options::rows), and
// "undetermined" listing any element the precision cap left undecided.
nlohmann::json write_answer(const Case& c, const Answer& a);

// The text of a case or answer file: `j` indented by one space, with a
// final newline. The command writes it with files::write_atomically.
std::string case_file_text(const nlohmann::json& j);

// "0x1.8p-1", "-0x0p+0", "inf", "-inf", "nan": a double as the case files
// write it (C99 %a).
std::string hex_float(double x);

}  // namespace moacert::oracle
