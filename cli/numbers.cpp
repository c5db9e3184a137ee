#include "cli/numbers.hpp"

#include <charconv>
#include <cmath>

#include "cli/commands.hpp"

namespace moacert::cli {

std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t seed = 0;
  const char* end = text.data() + text.size();
  const bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  const auto [ptr, ec] = std::from_chars(text.data(), end, seed);
  if (!digits || ec == std::errc::invalid_argument || ptr != end)
    throw UsageError("--seed '" + text + "' is not a whole number from 0 to 18446744073709551615");
  if (ec == std::errc::result_out_of_range)
    throw UsageError("--seed " + text +
                     " is out of range: at most 18446744073709551615 (2^64 - 1)");
  return seed;
}

void check_timeout(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds))
    throw UsageError("--timeout must be a positive number of seconds");
}

void check_threads(int threads, const std::string& command) {
  if (threads < 0)
    throw UsageError(command + ": --threads must be 0 (the OpenMP default) or more, got " +
                     std::to_string(threads));
}

}  // namespace moacert::cli
