// A figure in a certificate's JSON (docs/certificate.md, "Versions"): a
// number, or the string "inf", "-inf" or "nan" for what JSON cannot write.
#pragma once

#include <cmath>

#include <nlohmann/json.hpp>

namespace moacert::reports {

inline nlohmann::json number(double x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (std::isnan(x)) return "nan";
  return x;
}

inline bool is_figure(const nlohmann::json& j) {
  return j.is_number() || (j.is_string() && (j == "inf" || j == "-inf" || j == "nan"));
}

inline double figure_of(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  return j == "inf" ? INFINITY : j == "-inf" ? -INFINITY : NAN;
}

}  // namespace moacert::reports
