// The access check's hot path (docs/simt.md#hazards), inline so that the
// compiler's callbacks (instrumentation.cpp) judge an access of a size and
// kind known at compile time without a call: the race check of a byte's
// record (ordered, ByteCheck, check), the counts, and fast_access, which
// takes the common accesses (shared memory, or a registered buffer the
// launch has touched already) and hands every other
// to on_access (access.cpp), where the rest of the classification and every
// message live.
#pragma once

#include <cstring>

#include "simt/state.hpp"

namespace moacert::simt::detail {

#pragma GCC visibility push(hidden)

// The messages, out of line (access.cpp).
[[noreturn, gnu::cold]] void race(bool shared, std::uintptr_t a, std::size_t bytes, Access kind,
                                  std::uint64_t where, const Record& other, bool other_wrote);
[[noreturn, gnu::cold]] void uninitialised_read(std::uintptr_t a, std::size_t bytes, Access kind,
                                                std::uint64_t where);

// ---- the race check ------------------------------------------------------
// Whether record r (of another thread) happens before the current access:
// in this block (thread numbers [block_first, block_first + block_threads),
// compared without a division: this is the checker's hot path), before a
// barrier since, or in this warp before a collective of both lanes since.
inline bool ordered(const Record& r, const Fiber& me, std::uint32_t block_first) {
  const Launch& L = *runtime.launch;
  const std::uint32_t other_local = r.thread - 1 - block_first;
  if (other_local >= L.block_threads) return false;  // another block
  if (r.epoch != L.epoch) return true;               // a __syncthreads since
  if (other_local / 32 != me.warp) return false;
  const Warp& w = L.warps[me.warp];
  const std::uint32_t common = std::max(w.full_gen, w.pair_gen[other_local % 32][me.lane]);
  return common > r.warp_gen;
}

// One access's check of one byte's record: the access's invariants
// computed once (Record `mine`), then the record judged and updated.
struct ByteCheck {
  Fiber& me;
  const Launch& L;
  std::uint32_t gen, block_first;
  Record mine;
  bool shared;
  std::uintptr_t a;
  std::size_t access_bytes;
  Access kind;
  std::uint64_t where;

  [[gnu::always_inline]] bool conflicts(const Record& r) const {
    return r.thread && r.thread != mine.thread && !(r.atomic && mine.atomic) &&
           !ordered(r, me, block_first);
  }
  [[gnu::always_inline]] void operator()(ByteShadow& b) const {
    if (b.gen != gen) b = ByteShadow{gen, 0, {}, {}, {}};
    if (kind != Access::write && shared && !(b.written & kWritten))
      uninitialised_read(a, access_bytes, kind, where);
    if (conflicts(b.writer)) race(shared, a, access_bytes, kind, where, b.writer, true);
    if (kind == Access::read) {
      if (!b.reader.thread || b.reader.thread == mine.thread || b.reader.epoch != L.epoch)
        b.reader = mine;
      else
        b.other_reader = mine;
    } else {
      if (conflicts(b.reader)) race(shared, a, access_bytes, kind, where, b.reader, false);
      if (conflicts(b.other_reader))
        race(shared, a, access_bytes, kind, where, b.other_reader, false);
      b.writer = mine;
      b.written = kWritten;
      b.reader = b.other_reader = Record{};
    }
  }
};

// Whether the granule's four records are one (the flag apart, which only
// its first byte carries).
inline bool same_records(const ByteShadow* g) {
  for (std::size_t k = 1; k < kGranule; ++k)
    if (std::memcmp(&g[0], &g[k], sizeof(ByteShadow)) != 0) return false;
  return true;
}

// A uniform granule's record copied to its other bytes, before an access
// that covers part of it.
inline void split(ByteShadow* g) {
  g[0].written &= ~kUniform;
  for (std::size_t k = 1; k < kGranule; ++k) g[k] = g[0];
}

// Checks shadow entries [i0, i0 + bytes) of `base` for the current
// fiber's access. A granule of four entries whose records are one is kept
// as its first entry, flagged kUniform (the others stale): an access that
// covers it whole judges and updates that record once, which is what it
// would do to each of the four identical ones, in the same order (a hazard
// is found at its first byte, as before). An access to part of one splits
// it first.
[[gnu::always_inline]] inline void check(ByteShadow* base, std::size_t i0, std::size_t bytes,
                                         std::uint32_t gen, bool shared, std::uintptr_t a,
                                         std::size_t access_bytes, Access kind,
                                         std::uint64_t where) {
  Fiber& me = *tls_current;
  const Launch& L = *runtime.launch;
  const std::uint32_t block_first = L.block_linear * L.block_threads;
  const ByteCheck one{me,
                      L,
                      gen,
                      block_first,
                      Record{block_first + me.linear + 1, L.epoch, L.warps[me.warp].gen,
                             kind == Access::atomic, where},
                      shared,
                      a,
                      access_bytes,
                      kind,
                      where};
  const std::size_t end = i0 + bytes;
  for (std::size_t i = i0; i < end;) {
    ByteShadow* g = base + (i & ~(kGranule - 1));
    if (g == base + i && end - i >= kGranule) {  // the whole granule
      if (g->written & kUniform) {
        one(*g);
        g->written |= kUniform;
      } else {
        for (std::size_t k = 0; k < kGranule; ++k) one(g[k]);
        if (same_records(g)) g->written |= kUniform;
      }
      i += kGranule;
    } else {
      if (g->written & kUniform) split(g);
      one(base[i]);
      ++i;
    }
  }
}

inline void count(bool shared, Access kind, std::size_t bytes) {
  Counters& c = runtime.launch->counters;
  if (kind == Access::read) {
    (shared ? c.shared_loads : c.global_loads) += 1;
    (shared ? c.shared_load_bytes : c.global_load_bytes) += bytes;
  } else if (kind == Access::write) {
    (shared ? c.shared_stores : c.global_stores) += 1;
    (shared ? c.shared_store_bytes : c.global_store_bytes) += bytes;
  }
}

inline void count_in(BufferCounters& c, Access kind, std::size_t bytes) {
  if (kind == Access::read) {
    ++c.loads;
    c.load_bytes += bytes;
  } else if (kind == Access::write) {
    ++c.stores;
    c.store_bytes += bytes;
  }
}

// An access of N bytes of kind K by the current fiber, as on_access (or,
// kAligned, on_aligned_access) judges it: the common cases here, the others
// there. The same checks in the same order: a misaligned address, the
// fiber's own stack, then shared memory within the launch's dynamic bytes
// or the static variable the last access found, or a registered buffer already counted in this
// launch with its shadow, each checked against the cp.async in flight first, as on_access does.
template <std::size_t N, Access K, bool kAligned>
[[gnu::always_inline]] inline void fast_access(const void* address, const void* pc) {
  Fiber* me = tls_current;
  if (!me) return;
  const Launch& L = *runtime.launch;
  const auto a = reinterpret_cast<std::uintptr_t>(address);
  const auto slow = [&] {
    if (kAligned && N > 1)
      on_aligned_access(address, N, K, pc);
    else
      on_access(address, N, K, pc);
  };
  if ((kAligned && N > 1 && (a & (N - 1)) != 0) || !runtime.settings.options.check_accesses ||
      runtime.settings.options.yield_every_accesses)
    return slow();
  if (a >= L.stacks_lo && a < L.stacks_hi) return;  // a thread's locals
  const auto where = reinterpret_cast<std::uint64_t>(pc);
  if (a >= L.shared_lo && a + N <= L.shared_hi) {
    const bool dynamic =
        L.dynamic_lo && a + N > L.dynamic_lo && a < L.dynamic_lo + kMaxDynamicShared;
    if (dynamic && a + N > L.dynamic_lo + L.shared_bytes) return slow();
    // A static __shared__ variable's own extent (shared_variables.cpp): the
    // variable the last access found, inline; any other, and every access
    // past an extent, in on_access, which finds it or says so.
    if (!dynamic && !L.shared_variables.empty()) {
      const std::size_t h = L.shared_variable_hint;
      if (h >= L.shared_variables.size() || a < L.shared_variables[h].lo ||
          a + N > L.shared_variables[h].hi)
        return slow();
    }
    if (!L.copies.empty()) check_async_copies(a, N, K, true, where);
    count(true, K, N);
    check(runtime.shared_shadow.data(), a - L.shared_lo, N, L.block_gen, true, a, N, K, where);
    return;
  }
  if (runtime.buffer_hint >= runtime.buffers.size()) return slow();
  Buffer& b = runtime.buffers[runtime.buffer_hint];
  if (a < b.lo || a + N > b.hi || b.counted_in != L.launch_gen || b.shadow.size() < b.hi - b.lo)
    return slow();
  if (!L.copies.empty() && K != Access::read) check_async_copies(a, N, K, false, where);
  count(false, K, N);
  count_in(b.counts, K, N);
  check(b.shadow.data(), a - b.lo, N, L.launch_gen, false, a, N, K, where);
}

#pragma GCC visibility pop

}  // namespace moacert::simt::detail
