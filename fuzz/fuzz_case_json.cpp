// libFuzzer target: the case-file parser (oracle/case_json.cpp) on any
// bytes. A malformed file must be refused with a CaseError (or a JSON or
// argument error), never crash, leak or trip a sanitizer; a file it accepts
// must survive write_case → read_case unchanged. Built and run by
// scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "oracle/case_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const nlohmann::json j =
      nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  moacert::Case c;
  try {
    c = moacert::oracle::read_case(j);
  } catch (const std::invalid_argument&) {  // CaseError, ShapeError: refused
    return 0;
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  // Accepted: the round trip holds the same bits in the same layouts.
  const moacert::Case back = moacert::oracle::read_case(moacert::oracle::write_case(c));
  if (back.inputs.size() != c.inputs.size()) std::abort();
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    const auto& a = c.inputs[i];
    const auto& b = back.inputs[i];
    if (a.layout().str() != b.layout().str() || a.dtype() != b.dtype()) std::abort();
    const std::size_t bytes =
        std::size_t(a.layout().cosize()) * std::size_t(moacert::dtype_bytes(a.dtype()));
    for (const moacert::moa::Index& k : moacert::moa::iota(a.shape())) {
      const double x = a.get(k), y = b.get(k);
      if (std::memcmp(&x, &y, sizeof x) != 0 && !(x != x && y != y)) std::abort();
    }
    (void)bytes;
  }
  return 0;
}
