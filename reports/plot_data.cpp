#include "reports/plot_data.hpp"

#include <cmath>
#include <string>

#include "reports/json_figure.hpp"

namespace moacert::reports {

namespace {

using nlohmann::json;
using properties::PlotData;

// A value the run did not measure (no bound, PyTorch absent): null.
json optional_figure(double x) {
  return std::isnan(x) ? json(nullptr) : number(x);
}

[[noreturn]] void malformed(const std::string& field) {
  throw std::invalid_argument("field \"plot_data." + field + "\" malformed");
}

const json& at(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) malformed(where + key);
  return j[key];
}

double figure_at(const json& j, const std::string& where) {
  if (!is_figure(j)) malformed(where);
  return figure_of(j);
}

template <class T>
T integer_at(const json& j, const char* key, const std::string& where) {
  const json& v = at(j, key, where);
  if (!v.is_number_integer()) malformed(where + key);
  return v.get<T>();
}

}  // namespace

json plot_data_json(const PlotData& d) {
  json cases = json::array();
  for (const auto& c : d.cases) {
    json ulp = json::object(), ratio = json::object();
    for (std::size_t t = 0; t < d.tensors.size() && t < c.max_ulp.size(); ++t) {
      ulp[d.tensors[t]] = number(c.max_ulp[t]);
      ratio[d.tensors[t]] = number(c.max_ratio[t]);
    }
    cases.push_back({{"case", c.ordinal},
                     {"extents", c.extents},
                     {"max_ulp", ulp},
                     {"max_error_to_allowed", ratio}});
  }
  json elements = json::object();
  for (std::size_t t = 0; t < d.tensors.size() && t < d.elements.size(); ++t) {
    json kept = json::array();
    for (const auto& e : d.elements[t])
      kept.push_back({e.ordinal, e.element, number(e.ulps), number(e.abs_error),
                      optional_figure(e.bound), optional_figure(e.torch_ulps)});
    elements[d.tensors[t]] = {{"seen", d.elements_seen[t]}, {"kept", kept}};
  }
  json launches = json::array();
  for (const auto& l : d.launches)
    launches.push_back({{"case", l.ordinal},
                        {"launch", l.launch},
                        {"kernel", l.kernel},
                        {"atomics", l.atomics},
                        {"model_atomics", l.model_atomics},
                        {"bytes", l.bytes},
                        {"model_bytes", l.model_bytes}});
  return {{"dims", d.dims},
          {"tensors", d.tensors},
          {"cases", {{"seen", d.cases_seen}, {"kept", cases}}},
          {"elements", elements},
          {"launches", {{"seen", d.launches_seen}, {"kept", launches}}}};
}

PlotData plot_data_of(const json& certificate) {
  PlotData d;
  if (!certificate.is_object() || !certificate.contains("plot_data")) return d;
  const json& p = certificate["plot_data"];
  for (const char* list : {"dims", "tensors"}) {
    const json& names = at(p, list, "");
    if (!names.is_array()) malformed(list);
    for (const json& n : names) {
      if (!n.is_string()) malformed(list);
      (std::string(list) == "dims" ? d.dims : d.tensors).push_back(n.get<std::string>());
    }
  }
  const json& cases = at(p, "cases", "");
  d.cases_seen = integer_at<int>(cases, "seen", "cases.");
  const json& kept_cases = at(cases, "kept", "cases.");
  if (!kept_cases.is_array()) malformed("cases.kept");
  for (const json& c : kept_cases) {
    properties::CaseErrors e;
    e.ordinal = integer_at<int>(c, "case", "cases.kept[].");
    const json& extents = at(c, "extents", "cases.kept[].");
    if (!extents.is_array() || extents.size() != d.dims.size()) malformed("cases.kept[].extents");
    for (const json& x : extents) {
      if (!x.is_number_integer()) malformed("cases.kept[].extents");
      e.extents.push_back(x.get<std::int64_t>());
    }
    for (const std::string& t : d.tensors) {
      e.max_ulp.push_back(
          figure_at(at(at(c, "max_ulp", "cases.kept[]."), t.c_str(), "cases.kept[].max_ulp."),
                    "cases.kept[].max_ulp." + t));
      e.max_ratio.push_back(figure_at(at(at(c, "max_error_to_allowed", "cases.kept[]."), t.c_str(),
                                         "cases.kept[].max_error_to_allowed."),
                                      "cases.kept[].max_error_to_allowed." + t));
    }
    d.cases.push_back(std::move(e));
  }
  const json& elements = at(p, "elements", "");
  for (const std::string& t : d.tensors) {
    const std::string where = "elements." + t;
    const json& e = at(elements, t.c_str(), "elements.");
    d.elements_seen.push_back(integer_at<std::int64_t>(e, "seen", where + "."));
    const json& kept = at(e, "kept", where + ".");
    if (!kept.is_array()) malformed(where + ".kept");
    std::vector<properties::ElementPoint> points;
    for (const json& row : kept) {
      if (!row.is_array() || row.size() != 6 || !row[0].is_number_integer() ||
          !row[1].is_number_integer())
        malformed(where + ".kept[]");
      properties::ElementPoint x{row[0].get<int>(), row[1].get<std::int64_t>(),
                                 figure_at(row[2], where + ".kept[]"),
                                 figure_at(row[3], where + ".kept[]")};
      if (!row[4].is_null()) x.bound = figure_at(row[4], where + ".kept[]");
      if (!row[5].is_null()) x.torch_ulps = figure_at(row[5], where + ".kept[]");
      points.push_back(x);
    }
    d.elements.push_back(std::move(points));
  }
  const json& launches = at(p, "launches", "");
  d.launches_seen = integer_at<int>(launches, "seen", "launches.");
  const json& kept_launches = at(launches, "kept", "launches.");
  if (!kept_launches.is_array()) malformed("launches.kept");
  for (const json& l : kept_launches) {
    properties::LaunchPoint x;
    x.ordinal = integer_at<int>(l, "case", "launches.kept[].");
    x.launch = integer_at<int>(l, "launch", "launches.kept[].");
    const json& kernel = at(l, "kernel", "launches.kept[].");
    if (!kernel.is_string()) malformed("launches.kept[].kernel");
    x.kernel = kernel.get<std::string>();
    double* figures[] = {&x.atomics, &x.model_atomics, &x.bytes, &x.model_bytes};
    const char* names[] = {"atomics", "model_atomics", "bytes", "model_bytes"};
    for (int k = 0; k < 4; ++k) {
      const json& v = at(l, names[k], "launches.kept[].");
      if (!v.is_number()) malformed(std::string("launches.kept[].") + names[k]);
      *figures[k] = v.get<double>();
    }
    d.launches.push_back(std::move(x));
  }
  return d;
}

}  // namespace moacert::reports
