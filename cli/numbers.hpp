// Numbers on the command line that CLI11's own conversions would clamp or
// wrap silently (a seed past 2^64 - 1 became 2^64 - 1, `--seed -1` became
// 2^64 - 1): each is parsed here, strictly, and refused with one line
// (UsageError, exit 2) when out of range.
#pragma once

#include <cstdint>
#include <string>

namespace moacert::cli {

// A seed: decimal digits only, 0 to 18446744073709551615.
std::uint64_t parse_seed(const std::string& text);

// A plugin call's --timeout: a positive, finite number of seconds.
void check_timeout(double seconds);

// --threads: 0 (the OpenMP default) or more.
void check_threads(int threads, const std::string& command);

}  // namespace moacert::cli
