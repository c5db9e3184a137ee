// Registered buffers (cudaMalloc's, and every tensor of a plugin call):
// what an access is judged against, each with its name, its counters and
// its shadow.
#include <algorithm>
#include <string>
#include <vector>

#include "simt/state.hpp"

namespace moacert::simt::detail {

// Shadows of unregistered buffers, kept for the next ones: a plugin's
// worker registers fresh tensors for every call, and zeroing 80 bytes of
// shadow per byte each time would cost more than the checks. No clearing is
// needed: an entry is tagged with the launch that wrote it.
std::vector<ByteShadow> shadow_for(std::size_t bytes) {
  for (auto& spare : runtime.spare_shadows)
    if (spare.size() >= bytes) {
      std::vector<ByteShadow> s = std::move(spare);
      spare = std::move(runtime.spare_shadows.back());
      runtime.spare_shadows.pop_back();
      return s;
    }
  return std::vector<ByteShadow>(bytes);
}

namespace {

void keep_spare(std::vector<ByteShadow>&& shadow) {
  if (shadow.empty()) return;
  if (runtime.spare_shadows.size() >= 16)
    runtime.spare_shadows.erase(runtime.spare_shadows.begin());
  runtime.spare_shadows.push_back(std::move(shadow));
}

}  // namespace

}  // namespace moacert::simt::detail

using namespace moacert::simt;

extern "C" void moacert_simt_register_buffer(const void* ptr, std::size_t bytes, const char* name) {
  std::lock_guard lock(detail::runtime.mutex);
  const auto lo = reinterpret_cast<std::uintptr_t>(ptr);
  auto& bufs = detail::runtime.buffers;
  auto it = std::lower_bound(bufs.begin(), bufs.end(), lo,
                             [](const detail::Buffer& b, std::uintptr_t x) { return b.lo < x; });
  if (it != bufs.end() && it->lo == lo) {
    detail::keep_spare(std::move(it->shadow));
    bufs.erase(it);
  }
  it = std::lower_bound(bufs.begin(), bufs.end(), lo,
                        [](const detail::Buffer& b, std::uintptr_t x) { return b.lo < x; });
  bufs.insert(it, detail::Buffer{lo,
                                 lo + bytes,
                                 ++detail::runtime.buffer_serial,
                                 BufferCounters{name ? name : "buffer"},
                                 0,
                                 {}});
  detail::runtime.buffer_hint = 0;
}

extern "C" void moacert_simt_name_buffer(const void* ptr, const char* name) {
  std::lock_guard lock(detail::runtime.mutex);
  const auto lo = reinterpret_cast<std::uintptr_t>(ptr);
  for (detail::Buffer& b : detail::runtime.buffers)
    if (b.lo == lo) b.counts.name = name ? name : "buffer";
}

extern "C" void moacert_simt_unregister_buffer(const void* ptr) {
  std::lock_guard lock(detail::runtime.mutex);
  const auto lo = reinterpret_cast<std::uintptr_t>(ptr);
  auto& bufs = detail::runtime.buffers;
  for (auto it = bufs.begin(); it != bufs.end();)
    if (it->lo == lo) {
      detail::keep_spare(std::move(it->shadow));
      it = bufs.erase(it);
    } else {
      ++it;
    }
  detail::runtime.buffer_hint = 0;
}
