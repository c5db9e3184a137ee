// A hazard ends the launch: the first is kept, with the names of the
// threads, blocks and masks in its message.
#include <cstdio>
#include <string>

#include "simt/state.hpp"

namespace moacert::simt::detail {

std::string xyz(uint3 v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "(%u,%u,%u)", v.x, v.y, v.z);
  return buf;
}
uint3 unflatten(std::uint32_t i, dim3 d) {
  return {i % d.x, i / d.x % d.y, i / (d.x * d.y)};
}

std::string thread_name(std::uint32_t launch_thread) {
  const Launch& L = *runtime.launch;
  const std::uint32_t block = launch_thread / L.block_threads;
  return "thread " + xyz(unflatten(launch_thread % L.block_threads, L.block)) + " of block " +
         xyz(unflatten(block, L.grid));
}
std::string me_name(const Fiber& f) {
  return "thread " + xyz(f.tid) + " of block " + xyz(runtime.launch->block_idx);
}

[[noreturn]] void hazard(const std::string& kind, const std::string& message) {
  Launch& L = *runtime.launch;
  if (!L.failed) {
    L.failed = true;
    L.hazard_kind = kind;
    L.hazard_message = "moacert simt: " + kind + " in kernel " + L.kernel + ": " + message;
  }
  if (!tls_current) throw SchedulerHazard{};
  for (;;) switch_out();
}

std::string hex(unsigned v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

}  // namespace moacert::simt::detail
