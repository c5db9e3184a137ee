// oracle::memory_needed is an upper bound of what the oracle holds: every
// op's case is evaluated with this executable's heap counted (operator new
// and GMP's memory functions, which MPFR and MPFI allocate through, each
// block at what glibc's malloc takes for it), and the peak of the bytes
// allocated during evaluate() must not pass the statement. The cases reach
// every pass: the first pass (f32, bf16, f64), the double-double narrowing,
// and the Ziv loop up to the precision cap (exact digits past the cap send
// every element there); a sampled one; and a decode case whose kv heads
// the passes convert a run of units at a time (detail::for_each_chunk).
#include <gmp.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "oracle/memory.hpp"
#include "oracle/oracle.hpp"
#include "tests/support/harness.hpp"

namespace {

// The bytes allocated now and their high-water mark since reset().
std::atomic<long long> g_now{0}, g_peak{0};

void count(long long bytes) {
  const long long now = g_now.fetch_add(bytes) + bytes;
  long long peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}

// A block's share of the heap: its usable size and malloc's 8-byte header.
long long block_bytes(void* p) {
  return p ? (long long)malloc_usable_size(p) + 8 : 0;
}

void* counted_malloc(std::size_t n) {
  void* p = std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  count(block_bytes(p));
  return p;
}
void counted_free(void* p) {
  count(-block_bytes(p));
  std::free(p);
}

void* gmp_alloc(std::size_t n) {
  return counted_malloc(n);
}
void* gmp_realloc(void* p, std::size_t, std::size_t n) {
  count(-block_bytes(p));
  void* q = std::realloc(p, n);
  if (!q) std::abort();
  count(block_bytes(q));
  return q;
}
void gmp_free(void* p, std::size_t) {
  counted_free(p);
}

// Before main, so that every GMP block is counted when it is freed too.
const bool g_hooked = [] {
  mp_set_memory_functions(gmp_alloc, gmp_realloc, gmp_free);
  return true;
}();

}  // namespace

void* operator new(std::size_t n) {
  return counted_malloc(n);
}
void* operator new[](std::size_t n) {
  return counted_malloc(n);
}
void operator delete(void* p) noexcept {
  counted_free(p);
}
void operator delete[](void* p) noexcept {
  counted_free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  counted_free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  counted_free(p);
}

namespace moacert::oracle {
namespace {

constexpr int kThreads = 2;

// The peak bytes evaluate() allocated beyond what was held before it,
// the answer it returns included.
double measured_peak(const Case& c, const Options& o) {
  const long long before = g_now.load();
  g_peak.store(before);
  {
    const Answer a = evaluate(c, o);
    EXPECT_GT(a.elements, 0);
  }
  return double(g_peak.load() - before);
}

void expect_bounded(const Case& c, const Options& o, const std::string& what) {
  ASSERT_TRUE(g_hooked);
  const std::optional<SelectionBound> bound =
      o.rows ? std::optional(SelectionBound{*o.rows}) : std::nullopt;
  const double stated = memory_needed(c.problem, o.max_precision, o.threads,
                                      bound ? &*bound : nullptr, o.exact_digits);
  const double peak = measured_peak(c, o);
  EXPECT_LE(peak, stated) << what;
  std::printf("%-60s measured %10.0f B, stated %10.0f B (%.2fx)\n", what.c_str(), peak, stated,
              stated / peak);
}

// Every op, at the small shapes, through each pass.
TEST(OracleMemory, StatementBoundsEveryOpsPeak) {
  for (const OpInfo& op : all_ops()) {
    for (const Format f : {Format::f32, Format::bf16, Format::f64}) {
      const Case c = test::make_case(op.op, f, test::small_dims(op.op), 3);
      const std::string what = std::string(op.name) + " " + std::string(name(f));
      expect_bounded(c, {.threads = kThreads}, what);
      // Exact digits past the cap: every element through each MPFI level.
      expect_bounded(c, {.threads = kThreads, .exact_digits = 400}, what + " at the cap");
    }
  }
}

// A sampled case: the first query row only.
TEST(OracleMemory, StatementBoundsASampledCase) {
  for (const OpInfo& op : all_ops()) {
    const Case c = test::make_case(op.op, Format::f32, test::small_dims(op.op), 5);
    Options o{.threads = kThreads, .exact_digits = 400};
    o.rows = Selection{{0}, {}};
    expect_bounded(c, o, std::string(op.name) + " sampled, at the cap");
  }
}

// Decode with four kv heads of 256K elements each: past what two threads'
// units hold, so that each pass converts them a run of units at a time;
// at the cap an element of MPFI takes some 350 bytes.
TEST(OracleMemory, StatementBoundsDecodeConvertedByRuns) {
  Problem p;
  p.op = Op::attention_decode;
  p.format = Format::f32;
  p.dims = {.B = 1, .H = 4, .Hkv = 4, .N = 1, .M = 2048, .D = 64};
  const Case c = test::make_case(p, 7);
  expect_bounded(c, {.threads = kThreads}, "attention.decode L=2048 Hkv=4");
  expect_bounded(c, {.max_precision = 256, .threads = kThreads, .exact_digits = 400},
                 "attention.decode L=2048 Hkv=4, MPFI to a cap of 256 bits");
}

}  // namespace
}  // namespace moacert::oracle
