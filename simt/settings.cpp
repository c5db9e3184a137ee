// The emulator's options and schedule seed: from the environment
// (MOACERT_SIMT_STACK_BYTES, MOACERT_SIMT_DYNAMIC_SHARED, MOACERT_SIMT_SEED,
// MOACERT_SIMT_DEVICE_MEMORY)
// until the API sets them.
#include <algorithm>
#include <cstdlib>

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

}  // namespace

Settings::Settings() {
  options.stack_bytes = env_size("MOACERT_SIMT_STACK_BYTES", options.stack_bytes);
  options.dynamic_shared_limit = std::min(
      env_size("MOACERT_SIMT_DYNAMIC_SHARED", options.dynamic_shared_limit), kMaxDynamicShared);
  seed = env_size("MOACERT_SIMT_SEED", 0);
  device_memory = env_size("MOACERT_SIMT_DEVICE_MEMORY", 0);
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

extern "C" void moacert_simt_set_schedule_seed(std::uint64_t seed) {
  moacert::simt::set_schedule_seed(seed);
}
