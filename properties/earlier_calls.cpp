#include "properties/earlier_calls.hpp"

#include <exception>

#include "properties/check.hpp"
#include "properties/properties.hpp"

namespace moacert::properties {

bool run_setup(const kernels::Variant& v, const Token& token, const std::vector<Token::Call>& setup,
               int threads) {
  if (v.fresh_process) v.fresh_process();
  for (const Token::Call& call : setup) {
    const std::optional<CaseSpec> spec = spec_of(token, call);
    if (!spec) return false;
    try {
      (void)run_variant(v, make_case(*spec, v.conventions), threads);
    } catch (const kernels::DeviceOutOfMemory&) {  // the machine's limit: no verdict
      throw;
    } catch (const std::exception&) {
      return false;
    }
  }
  return true;
}

std::optional<std::vector<Token::Call>> find_setup(const kernels::Variant& v, const Token& token,
                                                   const std::vector<Token::Call>& earlier,
                                                   int threads,
                                                   const std::function<bool()>& fails_again) {
  // Most recent first: a workspace or a cache is most often the last
  // call's to leave.
  for (std::size_t k = 0; k < earlier.size() && k < kSingleSetupTries; ++k) {
    const std::vector<Token::Call> one{earlier[earlier.size() - 1 - k]};
    if (run_setup(v, token, one, threads) && fails_again()) return one;
  }
  if (earlier.size() > 1 && run_setup(v, token, earlier, threads) && fails_again()) return earlier;
  return std::nullopt;
}

namespace {

// Curated case k is index -k-1; random case i, index i.
std::int64_t number_of(const Token::Call& c) {
  return c.index < 0 ? -std::int64_t(c.index) - 1 : std::int64_t(c.index);
}

// "curated cases 0-19, random cases 0-3": runs of consecutive cases.
std::string ranges_of(const std::vector<Token::Call>& calls) {
  std::string out;
  for (std::size_t k = 0; k < calls.size();) {
    std::size_t end = k + 1;
    while (end < calls.size() && (calls[end].index < 0) == (calls[k].index < 0) &&
           number_of(calls[end]) == number_of(calls[end - 1]) + 1)
      ++end;
    const std::string kind = calls[k].index < 0 ? "curated case" : "random case";
    const std::string first = std::to_string(number_of(calls[k]));
    out += (out.empty() ? "" : ", ") +
           (end - k == 1 ? kind + " " + first
                         : kind + "s " + first + "-" + std::to_string(number_of(calls[end - 1])));
    k = end;
  }
  return out;
}

}  // namespace

std::string depends_words(const Token& token, const std::vector<Token::Call>& setup) {
  std::string calls;
  if (setup.size() <= 3) {
    for (std::size_t k = 0; k < setup.size(); ++k) {
      const std::optional<CaseSpec> spec = spec_of(token, setup[k]);
      std::string words = spec ? describe(*spec) : std::string("?");
      words = words.substr(0, words.find('\n'));  // its shape and values, not its layouts
      calls += std::string(k == 0                  ? ""
                           : k + 1 == setup.size() ? " and "
                                                   : ", ") +
               (setup[k].index < 0 ? "curated case " : "random case ") +
               std::to_string(number_of(setup[k])) + " (" + words + ")";
    }
    calls = (setup.size() == 1 ? "the call of " : "the calls of ") + calls +
            (setup.size() == 1 ? "" : ", in that order");
  } else {
    calls =
        "the " + std::to_string(setup.size()) + " calls of " + ranges_of(setup) + ", in that order";
  }
  return "depends on earlier calls: holds in a fresh worker, fails there after " + calls +
         ", which the token replays first";
}

}  // namespace moacert::properties
