// The emulator's options and schedule seed: from the environment
// (MOACERT_SIMT_STACK_BYTES, MOACERT_SIMT_DYNAMIC_SHARED, MOACERT_SIMT_SEED,
// MOACERT_SIMT_DEVICE_MEMORY)
// until the API sets them.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "simt/state.hpp"

namespace moacert::simt {

namespace detail {

namespace {

std::size_t env_size(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  return (end && *end == '\0' && n > 0) ? std::size_t(n) : fallback;
}

// The device's memory, whole bytes from 1 to its range of addresses; else
// `error` says why, and the device is as large as the host's memory.
std::size_t env_device_memory(std::string& error) {
  const char* v = std::getenv("MOACERT_SIMT_DEVICE_MEMORY");
  if (!v || !*v) return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  const bool digits =
      std::all_of(v, v + std::strlen(v), [](char c) { return c >= '0' && c <= '9'; });
  if (digits && errno == 0 && *end == '\0' && n >= 1 && n <= kDeviceRangeBytes)
    return std::size_t(n);
  error = "MOACERT_SIMT_DEVICE_MEMORY=" + std::string(v) +
          ": not a whole number of bytes from 1 to " + std::to_string(kDeviceRangeBytes) +
          " (the emulator's device range)";
  return 0;
}

}  // namespace

Settings::Settings() {
  options.stack_bytes = env_size("MOACERT_SIMT_STACK_BYTES", options.stack_bytes);
  options.dynamic_shared_limit = std::min(
      env_size("MOACERT_SIMT_DYNAMIC_SHARED", options.dynamic_shared_limit), kMaxDynamicShared);
  seed = env_size("MOACERT_SIMT_SEED", 0);
  device_memory = env_device_memory(error);
}

}  // namespace detail

void set_options(const Options& options) {
  std::lock_guard lock(detail::runtime.mutex);
  detail::runtime.settings.options = options;
  detail::runtime.settings.options.dynamic_shared_limit =
      std::min(options.dynamic_shared_limit, kMaxDynamicShared);
}
Options options() {
  return detail::runtime.settings.options;
}
void set_schedule_seed(std::uint64_t seed) {
  std::lock_guard lock(detail::runtime.mutex);
  detail::runtime.settings.seed = seed;
}

}  // namespace moacert::simt

extern "C" const char* moacert_simt_settings_error(void) {
  return moacert::simt::detail::runtime.settings.error.c_str();
}
extern "C" void moacert_simt_set_schedule_seed(std::uint64_t seed) {
  moacert::simt::set_schedule_seed(seed);
}
