// cp.async: a thread's asynchronous copies from global to shared memory,
// committed in groups (cp.async.commit_group) and waited for by count
// (cp.async.wait_group N). A copy is in flight from its issue until its
// thread waits for its group: touching its destination, or writing its
// source, in that time is an `async copy race` (docs/simt.md#tensor-cores).
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "simt/state.hpp"

namespace moacert::simt::detail {

namespace {

constexpr std::uint32_t kUncommitted = ~0u;

std::string address_text(std::uintptr_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#" PRIxPTR, a);
  return buf;
}

bool overlaps(std::uintptr_t lo, std::size_t bytes, std::uintptr_t other, std::size_t other_bytes) {
  return lo < other + other_bytes && other < lo + bytes;
}

[[noreturn]] void in_flight_race(const AsyncCopy& c, const std::string& what, std::uint64_t where) {
  const Launch& L = *runtime.launch;
  hazard("async copy race",
         me_name(*tls_current) + " " + what + " (" + describe_where(where) + "), and " +
             thread_name(L.block_linear * L.block_threads + c.thread) + "'s cp.async of " +
             std::to_string(c.bytes) + " bytes (" + describe_where(c.where) +
             ") is in flight: its thread has not waited for its group (cp.async.wait_group)");
}

// The destination lies in the block's shared memory: within the launch's
// dynamic shared bytes in the dynamic arena, or the static shared arrays.
bool in_shared(std::uintptr_t a, std::size_t bytes) {
  const Launch& L = *runtime.launch;
  if (L.dynamic_lo && a >= L.dynamic_lo && a < L.dynamic_lo + kMaxDynamicShared)
    return a + bytes <= L.dynamic_lo + L.shared_bytes;
  return a >= L.shared_lo && a + bytes <= L.shared_hi;
}

// Marks (or clears) a destination's bytes as written by a copy in flight.
void mark_in_flight(const AsyncCopy& c, std::uint32_t block) {
  const Launch& L = *runtime.launch;
  for (std::size_t i = 0; i < c.bytes; ++i)
    runtime.shared_in_flight[c.dst - L.shared_lo + i] = block;
}

// Completes the copies of the current thread in groups up to `last`: the
// data lands in shared memory, written by this thread now, so that another
// thread needs a barrier after this wait to read it (a shared race
// otherwise, though the issue was in an earlier barrier interval).
void complete_groups(std::uint32_t last) {
  Launch& L = *runtime.launch;
  const std::uint32_t me = tls_current->linear;
  std::vector<AsyncCopy> landed;
  std::size_t kept = 0;
  for (const AsyncCopy& c : L.copies)
    if (c.thread == me && c.group != kUncommitted && c.group <= last)
      landed.push_back(c);
    else
      L.copies[kept++] = c;
  L.copies.resize(kept);
  for (const AsyncCopy& c : landed) {
    mark_in_flight(c, 0);
    std::memcpy(reinterpret_cast<void*>(c.dst), reinterpret_cast<const void*>(c.src), c.bytes);
    record_shared_write(c.dst, c.bytes, c.where);
  }
}

}  // namespace

void check_async_copies(std::uintptr_t a, std::size_t bytes, Access kind, bool shared,
                        std::uint64_t where) {
  const Launch& L = *runtime.launch;
  if (shared) {  // the bytes' marks first: the copies are scanned only for a hazard
    bool in_flight = false;
    for (std::size_t i = 0; i < bytes; ++i)
      in_flight |= runtime.shared_in_flight[a - L.shared_lo + i] == L.block_gen;
    if (!in_flight) return;
  }
  for (const AsyncCopy& c : L.copies) {
    if (shared && overlaps(a, bytes, c.dst, c.bytes))
      in_flight_race(c,
                     std::string(kind == Access::read ? "reads " : "writes ") +
                         std::to_string(bytes) + " bytes of its destination, shared " +
                         address_text(a),
                     where);
    if (!shared && kind != Access::read && overlaps(a, bytes, c.src, c.bytes))
      in_flight_race(
          c, "writes " + std::to_string(bytes) + " bytes of its source " + address_text(a), where);
  }
}

void async_copy(void* dst, const void* src, int bytes, bool cache_global, Site site) {
  Fiber* me = tls_current;
  const auto d = reinterpret_cast<std::uintptr_t>(dst);
  const auto s = reinterpret_cast<std::uintptr_t>(src);
  if (!me) {
    std::memcpy(dst, src, std::size_t(bytes));
    return;
  }
  Launch& L = *runtime.launch;
  const std::uint64_t where = intern(site);
  // The message's head, built only for a hazard: this runs for every copy.
  const auto head = [&] {
    return me_name(*me) + " issues cp.async." + (cache_global ? "cg" : "ca") + " of " +
           std::to_string(bytes) + " bytes from " + address_text(s) + " to " + address_text(d) +
           " (" + describe_where(where) + ")";
  };
  if ((bytes != 4 && bytes != 8 && bytes != 16) || (cache_global && bytes != 16))
    hazard("bad launch", head() + ": cp.async.ca copies 4, 8 or 16 bytes, .cg 16");
  if (d % std::uintptr_t(bytes) || s % std::uintptr_t(bytes))
    hazard("misaligned access",
           head() + ": both addresses must be aligned to the copy's size (PTX ISA)");
  if (!in_shared(d, std::size_t(bytes)))
    hazard("out of bounds", head() + ": the destination is not in the block's shared memory");
  // The source is read (checked and counted as a global load), the
  // destination written (as a shared store), both by this thread now: races
  // with other threads are the barrier-interval check's; the time in flight
  // is this file's.
  on_access(src, std::size_t(bytes), Access::read, reinterpret_cast<const void*>(where));
  on_access(dst, std::size_t(bytes), Access::write, reinterpret_cast<const void*>(where));
  L.copies.push_back({d, s, std::size_t(bytes), where, me->linear, kUncommitted});
  mark_in_flight(L.copies.back(), L.block_gen);
}

void async_commit_group(Site) {
  Fiber* me = tls_current;
  if (!me) return;
  ++me->async_groups;
  for (AsyncCopy& c : runtime.launch->copies)
    if (c.thread == me->linear && c.group == kUncommitted) c.group = me->async_groups;
}

void async_wait_group(int pending, Site) {
  Fiber* me = tls_current;
  if (!me) return;
  if (me->async_groups > std::uint32_t(pending))
    complete_groups(me->async_groups - std::uint32_t(pending));
}

}  // namespace moacert::simt::detail
