// The emulated device's memory: one range of the address space, reserved
// once (PROT_NONE, MAP_NORESERVE: it costs no memory), from which cudaMalloc
// hands out page-aligned allocations. An address is device memory iff it
// lies in the range, so that a kernel handed host memory (a heap buffer) is
// told so at the access, and an address in the range but in no allocation
// is out of bounds of the nearest one. The range is readable and writable
// only while a launch or a runtime call is in progress: host code that
// touches device memory faults, and the SIGSEGV handler (stacks.cpp) names
// the tensor (docs/simt.md#device-memory).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>

#include "simt/state.hpp"

namespace moacert::simt::detail {

namespace {

std::size_t page_bytes() {
  static const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  return page;
}
std::size_t round_to_pages(std::size_t bytes) {
  const std::size_t page = page_bytes();
  return (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
}

// 1 TiB of addresses, else less where the address space is smaller (a
// reservation of PROT_NONE pages commits nothing).
bool reserve() {
  DeviceRange& d = runtime.device;
  if (d.hi) return true;
  install_fault_handler();  // before any allocation a host access could fault in
  for (std::size_t bytes = kDeviceRangeBytes; bytes >= (std::size_t(1) << 30); bytes /= 2) {
    void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) continue;
    d.lo = reinterpret_cast<std::uintptr_t>(p);
    d.hi = d.lo + bytes;
    d.used_hi = d.lo;
    d.free[d.lo] = bytes;
    return true;
  }
  return false;
}

// The allocated part of the range, [lo, used_hi), readable and writable or
// not. One mprotect for all allocations: free pages inside it become
// accessible too while open, and a kernel's access to them is out of bounds
// by the buffers, not by the page.
void protect(int prot) {
  const DeviceRange& d = runtime.device;
  if (d.used_hi > d.lo) mprotect(reinterpret_cast<void*>(d.lo), d.used_hi - d.lo, prot);
}

}  // namespace

void open_device() {
  if (runtime.device.open++ == 0) protect(PROT_READ | PROT_WRITE);
}
void close_device() {
  if (--runtime.device.open == 0) protect(PROT_NONE);
}

std::size_t device_range_bytes() {
  return reserve() ? runtime.device.hi - runtime.device.lo : 0;
}

void* device_allocate(std::size_t bytes) {
  if (!reserve()) return nullptr;
  const std::size_t need = round_to_pages(bytes);
  auto& free = runtime.device.free;
  // First fit: allocations of a worker's call are alike and short-lived.
  for (auto it = free.begin(); it != free.end(); ++it) {
    if (it->second < need) continue;
    const std::uintptr_t at = it->first;
    const std::size_t left = it->second - need;
    free.erase(it);
    if (left) free[at + need] = left;
    void* p = reinterpret_cast<void*>(at);
    DeviceRange& d = runtime.device;
    d.used_hi = std::max(d.used_hi, at + need);
    if (d.open > 0 && mprotect(p, need, PROT_READ | PROT_WRITE) != 0) {
      device_release(p, bytes);
      return nullptr;
    }
    return p;
  }
  return nullptr;
}

void device_release(void* p, std::size_t bytes) {
  const std::size_t n = round_to_pages(bytes);
  // Fresh PROT_NONE pages over the old ones: their memory goes back to the
  // system, and a stale pointer faults on the host.
  mmap(p, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  auto& free = runtime.device.free;
  std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(p);
  std::size_t len = n;
  auto next = free.lower_bound(lo);
  if (next != free.end() && lo + len == next->first) {  // coalesce with the extent after
    len += next->second;
    next = free.erase(next);
  }
  if (next != free.begin()) {  // and with the one before
    auto prev = std::prev(next);
    if (prev->first + prev->second == lo) {
      prev->second += len;
      return;
    }
  }
  free[lo] = len;
}

const std::pair<const void* const, std::size_t>* device_allocation_of(const void* p,
                                                                      std::size_t bytes) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto& allocations = runtime.device_allocations;
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin()) return nullptr;
  --it;
  const auto lo = reinterpret_cast<std::uintptr_t>(it->first);
  if (a < lo || a - lo > it->second || bytes > it->second - (a - lo)) return nullptr;
  return &*it;
}

}  // namespace moacert::simt::detail
