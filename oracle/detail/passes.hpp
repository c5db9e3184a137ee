// The two passes of the oracle, seen from oracle.cpp and the tests. Each
// evaluates the DNF on a set of units (detail/units.hpp) and reports every
// output element's enclosure through a callback that may be called from
// several threads at once, each time for a different element.
#pragma once

#include <cmath>
#include <functional>
#include <span>

#include <mpfi.h>

#include "oracle/oracle.hpp"
#include "reference/case.hpp"

namespace moacert::oracle::detail {

struct Unit;
struct ForwardMemo;

// Elements are named by (output in ops-table order, row-major flat index);
// `unit` is the position in the span of units the pass was given.
using FastSink =
    std::function<void(std::size_t unit, int output, moa::extent_t flat, double lo, double hi)>;
using DDSink = std::function<void(std::size_t unit, int output, moa::extent_t flat, const DD& lo,
                                  const DD& hi)>;
using MpfiSink =
    std::function<void(std::size_t unit, int output, moa::extent_t flat, mpfi_srcptr x)>;

// The first pass: the DNF over intervals of doubles with directed rounding,
// its O(M·D) reductions vectorised (Highway, the target chosen at run time).
// The sink runs under round-upward: it should store, not compute.
// Not for block (UnitKind::batch): its DNF computes its attention scale
// 1/sqrt(D) in double inside the template, which under round-upward would
// be a different double from the definition's; block goes straight to MPFI.
void fast_pass(const Case& c, std::span<const Unit> units, int threads, const FastSink& sink);
// The same, attention.fwd over every row, also filling `keep`
// (Options::keep_forward_rows; forward_memo.hpp).
void fast_pass_keeping(const Case& c, std::span<const Unit> units, int threads,
                       const FastSink& sink, ForwardMemo& keep);
// The same, the key rows' forward rows taken from `given`, the memo of the
// case's q, k, v (forward_memo_for). Returns the query rows taken.
std::int64_t fast_pass_given(const Case& c, std::span<const Unit> units, int threads,
                             const FastSink& sink, const ForwardMemo& given);

// The vectorised first pass of mlp.swiglu's rows (fast_mlp.cpp): every
// unit an mlp_row, all of them run at once, the weights streamed from the
// case (detail/streamed_mlp.hpp), over `team` threads; `unit` in the sink
// counts from the span's first. Call it under round-to-nearest: its
// parallel regions set round-upward on their threads.
void fast_mlp_rows(const Case& c, std::span<const Unit> units, int team, const FastSink& sink);

// The first pass as first written: scalar loops, every exp bound from MPFR.
// Not used by evaluate(); the yardstick of fast_pass's speed and decided
// share (bench/oracle_bench, tests/oracle/test_fast_pass.cpp).
void fast_pass_reference(const Case& c, std::span<const Unit> units, int threads,
                         const FastSink& sink);

// The first pass of f64 targets: the DNF over intervals of double-doubles
// (detail/dd_interval.hpp), each end's value hi + lo. Not for block either.
void dd_pass(const Case& c, std::span<const Unit> units, int threads, const DDSink& sink);

// The DNF over MPFI intervals of (at least) `bits` bits of precision.
// Returns the precision actually used (Boost counts precision in decimal
// digits, so it may round `bits` up a little).
int mpfi_pass(const Case& c, std::span<const Unit> units, int bits, int threads,
              const MpfiSink& sink);

// The number of threads for Options::threads (0: the OpenMP default).
int thread_count(int requested);

// What glibc's malloc takes for a request of n bytes: n and its 8-byte
// header rounded up to 16, at least 32 (oracle/memory.cpp counts MPFR's limbs
// and the answer's strings with it).
inline double heap_bytes(double n) {
  const double chunk = 16 * std::ceil((n + 8) / 16);
  return chunk < 32 ? 32 : chunk;
}

// The bytes one mpfi_float takes at the precision mpfi_pass(bits) sets: the
// object, and the limbs of its two ends on the heap.
double mpfi_element_bytes(int bits);

// The precision at which the MPFI pass holds the inputs it converts,
// whatever its level: every input is a float of at most 53 bits, so 64
// hold each exactly, and its arithmetic rounds to the level's precision
// (each result is a new number, made at the default precision). At the
// 1024-bit cap an input so takes about 128 bytes instead of 384, and the
// inputs are most of what the pass holds. (Attention's rows it streams
// from the case instead: a decode kv head's K and V at L = 131072, 33.5
// million elements, were 4 GiB of them; detail/streamed_attention.hpp.)
inline constexpr int kMpfiInputBits = 64;

}  // namespace moacert::oracle::detail
