// The emulated backend's launch log (launch_log.hpp), in the kernels' own
// module, libmoacert_cuda_simt.so: note_launch runs after each launch and
// keeps the emulator's counters of it. Not thread_local: the emulator
// treats its kernels' module's whole TLS block as shared memory and
// poisons it at every block start (docs/simt.md), so this module holds no
// TLS of its own but the shared arena.
#define MOACERT_SIMT_UNINSTRUMENTED 1
#include <mutex>
#include <string>

#include "kernels/cuda/cuda_compat.cuh"
#include "kernels/cuda/launch_log.hpp"

namespace moacert::kernels::simt {
namespace {

std::mutex log_mutex;
std::vector<LaunchRecord> log;
LaunchRecord totals;
std::uint64_t launches = 0;

}  // namespace

void note_launch(const char* kernel) {
  using C = ::moacert::simt::Counters;
  const C c = ::moacert::simt::last_launch_counters();
  LaunchRecord r;
  r.kernel = kernel;
  r.blocks = c.blocks;
  r.barriers = c.barriers;
  r.global_loads = c.global_loads;
  r.global_load_bytes = c.global_load_bytes;
  r.global_stores = c.global_stores;
  r.global_store_bytes = c.global_store_bytes;
  r.atomic_add_global = c.atomics[C::global][C::add];
  for (int s = 0; s < C::n_spaces; ++s)
    for (int k = 0; k < C::n_atomic_kinds; ++k) r.atomics_other += c.atomics[s][k];
  r.atomics_other -= r.atomic_add_global;
  for (const ::moacert::simt::BufferCounters& b : c.buffers)
    r.tensors.push_back({b.name, b.loads, b.load_bytes, b.stores, b.store_bytes, b.atomics});
  const std::lock_guard<std::mutex> lock(log_mutex);
  ++launches;
  totals.blocks += r.blocks;
  totals.barriers += r.barriers;
  totals.global_loads += r.global_loads;
  totals.global_load_bytes += r.global_load_bytes;
  totals.global_stores += r.global_stores;
  totals.global_store_bytes += r.global_store_bytes;
  totals.atomic_add_global += r.atomic_add_global;
  totals.atomics_other += r.atomics_other;
  log.push_back(std::move(r));
}

LaunchRecord launch_totals() {
  const std::lock_guard<std::mutex> lock(log_mutex);
  LaunchRecord t = totals;
  t.kernel = std::to_string(launches) + " launches";
  return t;
}

std::vector<LaunchRecord> take_launch_log() {
  const std::lock_guard<std::mutex> lock(log_mutex);
  std::vector<LaunchRecord> out;
  out.swap(log);
  return out;
}

std::size_t launch_log_size() {
  const std::lock_guard<std::mutex> lock(log_mutex);
  return log.size();
}

std::vector<LaunchRecord> launch_log_from(std::size_t first) {
  const std::lock_guard<std::mutex> lock(log_mutex);
  if (first >= log.size()) return {};
  return {log.begin() + std::ptrdiff_t(first), log.end()};
}

void set_schedule_seed(std::uint64_t seed) {
  ::moacert::simt::set_schedule_seed(seed);
}

}  // namespace moacert::kernels::simt
