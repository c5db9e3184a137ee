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
// needed: an entry is tagged with the launch that wrote it. At most
// kSpareShadowBytes are kept, so that what a large case's buffers needed is
// not held through the cases after it, beyond what --max-memory counts.
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

std::size_t shadow_bytes(const std::vector<ByteShadow>& shadow) {
  return shadow.capacity() * sizeof(ByteShadow);
}

void keep_spare(std::vector<ByteShadow>&& shadow) {
  const std::size_t bytes = shadow_bytes(shadow);
  if (shadow.empty() || bytes > kSpareShadowBytes) return;  // freed with its buffer
  auto& spares = runtime.spare_shadows;
  std::size_t held = 0;
  for (const auto& spare : spares) held += shadow_bytes(spare);
  while (!spares.empty() && (spares.size() >= 16 || held + bytes > kSpareShadowBytes)) {
    held -= shadow_bytes(spares.front());
    spares.erase(spares.begin());
  }
  spares.push_back(std::move(shadow));
}

// Erases a buffer, its shadow kept for the next one.
std::vector<Buffer>::iterator erase(std::vector<Buffer>::iterator it) {
  if (!runtime.device.holds(it->lo)) --runtime.host_buffers;
  keep_spare(std::move(it->shadow));
  runtime.buffer_hint = 0;
  return runtime.buffers.erase(it);
}

}  // namespace

void unregister_allocation(const void* p, std::size_t bytes) {
  const auto lo = reinterpret_cast<std::uintptr_t>(p);
  auto& bufs = runtime.buffers;
  for (auto it = bufs.begin(); it != bufs.end();)
    it = it->lo >= lo && it->lo - lo < std::max<std::size_t>(bytes, 1) ? erase(it) : it + 1;
}

}  // namespace moacert::simt::detail

using namespace moacert::simt;

extern "C" void moacert_simt_register_buffer(const void* ptr, std::size_t bytes, const char* name) {
  std::lock_guard lock(detail::runtime.mutex);
  const auto lo = reinterpret_cast<std::uintptr_t>(ptr);
  auto& bufs = detail::runtime.buffers;
  auto it = std::lower_bound(bufs.begin(), bufs.end(), lo,
                             [](const detail::Buffer& b, std::uintptr_t x) { return b.lo < x; });
  if (it != bufs.end() && it->lo == lo) detail::erase(it);
  it = std::lower_bound(bufs.begin(), bufs.end(), lo,
                        [](const detail::Buffer& b, std::uintptr_t x) { return b.lo < x; });
  bufs.insert(it, detail::Buffer{lo,
                                 lo + bytes,
                                 ++detail::runtime.buffer_serial,
                                 BufferCounters{name ? name : "buffer"},
                                 0,
                                 {}});
  if (!detail::runtime.device.holds(lo)) ++detail::runtime.host_buffers;
  detail::runtime.buffer_hint = 0;
}

// The worker's guards around a device tensor are its own: the kernel's
// bounds are the tensor's bytes (docs/simt.md#device-memory).
extern "C" void moacert_simt_bound_buffer(const void* ptr, std::size_t offset, std::size_t bytes) {
  std::lock_guard lock(detail::runtime.mutex);
  const auto lo = reinterpret_cast<std::uintptr_t>(ptr);
  for (detail::Buffer& b : detail::runtime.buffers)
    if (b.lo == lo && offset <= b.hi - b.lo && bytes <= b.hi - b.lo - offset) {
      // Buffers never overlap, so the order by lo stands.
      b.lo += offset;
      b.hi = b.lo + bytes;
      b.shadow.clear();  // sized again, to the new bounds, on the first access
      return;
    }
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
  for (auto it = bufs.begin(); it != bufs.end();) it = it->lo == lo ? detail::erase(it) : it + 1;
  detail::runtime.buffer_hint = 0;
}
