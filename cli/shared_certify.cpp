#include "cli/shared_certify.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "properties/parallel_cases.hpp"
#include "properties/wire.hpp"

namespace moacert::cli {

namespace {

// A count written as text, "124 launches": its number and its noun.
std::optional<std::pair<std::uint64_t, std::string>> counted_text(const nlohmann::ordered_json& j) {
  if (!j.is_string()) return std::nullopt;
  const std::string text = j.get<std::string>();
  const std::size_t space = text.find(' ');
  if (space == 0 || space == std::string::npos || text.find_first_not_of("0123456789") != space)
    return std::nullopt;
  return std::pair{std::stoull(text.substr(0, space)), text.substr(space)};
}

// The emulator's counters of several processes as one: numbers add up, and
// so do counts written as "N things"; anything else is the first
// process's.
std::string sum_counters(const std::vector<std::string>& each) {
  std::vector<std::string> given;
  for (const std::string& c : each)
    if (!c.empty()) given.push_back(c);
  if (given.size() <= 1) return given.empty() ? std::string() : given.front();
  auto total = nlohmann::ordered_json::parse(given.front());
  for (std::size_t k = 1; k < given.size(); ++k) {
    const auto theirs = nlohmann::ordered_json::parse(given[k]);
    for (const auto& [name, value] : theirs.items()) {
      auto& kept = total[name];
      const auto kept_text = counted_text(kept), value_text = counted_text(value);
      if (kept.is_number_unsigned() && value.is_number_unsigned())
        kept = kept.get<std::uint64_t>() + value.get<std::uint64_t>();
      else if (kept.is_number_integer() && value.is_number_integer())
        kept = kept.get<std::int64_t>() + value.get<std::int64_t>();
      else if (kept.is_number() && value.is_number())
        kept = kept.get<double>() + value.get<double>();
      else if (kept_text && value_text && kept_text->second == value_text->second)
        kept = std::to_string(kept_text->first + value_text->first) + kept_text->second;
      else if (kept.is_null())
        kept = value;
    }
  }
  return total.dump();
}

}  // namespace

SharedCertificate certify_shared(const properties::CertifyOptions& o, Ranks& ranks) {
  const properties::CaseRunner runner(o);
  const int k = ranks.size();
  int bound = runner.size();  // cases from here on are past a counterexample
  std::vector<properties::CaseRecord> mine;
  // One process: its cases --jobs at a time (properties/parallel_cases.hpp;
  // o.progress one thread at a time, as certify_on_ranks makes it).
  if (k == 1)
    mine = properties::run_cases(runner, properties::jobs_for(*o.variant, o.jobs), o.progress);
  for (int p = ranks.rank(); k > 1 && p < bound; p += k) {
    if (const auto heard = ranks.heard()) bound = std::min(bound, *heard);
    if (p >= bound) break;
    // The others hear of a counterexample before it is shrunk.
    mine.push_back(runner.run(p, [&] { ranks.announce(p); }));
    if (!mine.back().holds) break;
    if (o.progress) o.progress(p + 1, runner.size(), properties::phase_of(mine.back().kind));
  }
  // The root's counters are read after the certificate, which runs the
  // schedule spread; the others' now.
  const auto counters = [&] {
    return o.variant->instrumentation ? o.variant->instrumentation->simt_counters() : "";
  };
  properties::WireWriter w;
  w.put(properties::encode_records(mine));
  w.put(ranks.root() ? std::string() : counters());
  const std::vector<std::string> all = ranks.gather(w.take());
  ranks.settle();
  if (!ranks.root()) return {};

  SharedCertificate out;
  std::vector<properties::CaseRecord> records;
  std::vector<std::string> each_counters;
  int lowest_failure = runner.size();
  for (std::size_t r = 0; r < all.size(); ++r) {
    properties::WireReader in(all[r]);
    std::vector<properties::CaseRecord> theirs = properties::decode_records(in.get_string());
    each_counters.push_back(in.get_string());
    in.expect_done();
    out.cases_by_rank.push_back(int(theirs.size()));
    for (auto& rec : theirs) {
      if (!rec.holds && rec.position < lowest_failure) {
        lowest_failure = rec.position;
        out.failing_rank = int(r);
      }
      records.push_back(std::move(rec));
    }
  }
  out.cert = runner.certificate(std::move(records));
  each_counters.front() = counters();
  out.simt_counters = sum_counters(each_counters);
  return out;
}

}  // namespace moacert::cli
