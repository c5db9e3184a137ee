// Tensor cores: mma.sync.m16n8k16 and ldmatrix as warp collectives over the
// lanes' own registers, in the fragment layouts of the PTX ISA ("Matrix
// Fragments for mma.m16n8k16 with floating point type"; "ldmatrix"), and
// the accumulation inside one mma by the stated model of tensor-core
// arithmetic (docs/simt.md#tensor-cores).
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

#include "simt/state.hpp"

namespace moacert::simt::detail {

namespace {

// ---- the inputs: bf16 and f16, exactly as doubles -------------------------
double bf16_value(std::uint16_t bits) {
  return double(std::bit_cast<float>(std::uint32_t(bits) << 16));
}
double f16_value(std::uint16_t bits) {
  const double sign = bits >> 15 ? -1.0 : 1.0;
  const int exponent = bits >> 10 & 0x1f;
  const int fraction = bits & 0x3ff;
  if (exponent == 0x1f)
    return fraction ? std::numeric_limits<double>::quiet_NaN()
                    : sign * std::numeric_limits<double>::infinity();
  if (exponent == 0) return sign * std::ldexp(double(fraction), -24);  // subnormal
  return sign * std::ldexp(double(0x400 | fraction), exponent - 25);
}
double input_value(MmaInput input, std::uint16_t bits) {
  return input == MmaInput::bf16 ? bf16_value(bits) : f16_value(bits);
}

// ---- the model of one accumulation step ------------------------------------
// f32's significand: 24 bits; its least subnormal: 2^-149.
constexpr int kSignificandBits = 24;
constexpr int kLeastExponent = -149;

// 2^n for n in [-1022, 1023], and ilogb(x) for a finite nonzero x, from the
// bits: this runs for every addend of every mma (256 sums of 9 a warp).
// Every addend here is a normal double (a product of two bf16 or f16 values
// is at least 2^-266, an f32 accumulator at least 2^-149), so that x * 2^n
// is exact where ldexp(x, n) was, and a subnormal falls back to ilogb.
double pow2(int n) {
  return std::bit_cast<double>(std::uint64_t(n + 1023) << 52);
}
int exponent_of(double x) {
  const int biased = int(std::bit_cast<std::uint64_t>(x) >> 52 & 0x7ff);
  return biased ? biased - 1023 : std::ilogb(x);
}

// m * 2^e (m an integer, |m| < 2^62) truncated toward zero to f32.
float truncate_to_f32(std::int64_t m, int e) {
  const bool negative = m < 0;
  std::uint64_t magnitude = negative ? std::uint64_t(-m) : std::uint64_t(m);
  while (magnitude >> kSignificandBits) {
    magnitude >>= 1;
    ++e;
  }
  while (magnitude && e < kLeastExponent) {
    magnitude >>= 1;
    ++e;
  }
  // magnitude < 2^24 and e >= -149: exact in f32 unless beyond its range
  // (and in a double, e being far below 1023).
  const double value = double(magnitude) * pow2(e);
  const float result = value > double(std::numeric_limits<float>::max())
                           ? std::numeric_limits<float>::infinity()
                           : float(value);
  return negative ? -result : result;
}

// c + p[0] + ... + p[n-1], the products exact: every addend aligned to the
// largest exponent among them, each truncated toward zero to a multiple of
// 2^(e_max - 23) (f32's precision at the largest addend, no guard bits),
// the aligned addends summed exactly, the sum truncated toward zero to f32.
// An infinite or NaN addend gives IEEE's sum (inf - inf is NaN).
float aligned_truncated_sum(float c, const double* p, int n) {
  double ieee = c;
  int e_max = std::numeric_limits<int>::min();
  if (c != 0.0f && std::isfinite(c)) e_max = exponent_of(c);
  for (int k = 0; k < n; ++k) {
    ieee += p[k];
    if (p[k] != 0.0 && std::isfinite(p[k])) e_max = std::max(e_max, exponent_of(p[k]));
  }
  if (!std::isfinite(ieee) || e_max == std::numeric_limits<int>::min()) return float(ieee);
  const int quantum = e_max - (kSignificandBits - 1);
  // |addend| < 2^(e_max+1), so each aligned addend is below 2^24 quanta,
  // and the conversion truncates toward zero.
  const double scale = pow2(-quantum);
  auto aligned = [&](double x) { return std::int64_t(x * scale); };
  std::int64_t sum = aligned(double(c));
  for (int k = 0; k < n; ++k) sum += aligned(p[k]);
  return truncate_to_f32(sum, quantum);
}

// The products of one mma are accumulated in blocks of this many, each
// block with the running accumulator as its c (the A100's, measured).
constexpr int kBlock = 8;

// ---- the fragment layouts of mma.m16n8k16 (PTX ISA), per lane -------------
// groupID = lane / 4, threadID_in_group = lane % 4; the lower 16 bits of a
// register hold the element of lower index.
struct Element {
  int row, col;
};
// A (16x16, .row): register r, half h.
Element a_element(int lane, int r, int h) {
  return {lane / 4 + 8 * (r & 1), 2 * (lane % 4) + h + 8 * (r >> 1)};
}
// B (16x8, .col): register r, half h; row is k, col is n.
Element b_element(int lane, int r, int h) {
  return {2 * (lane % 4) + h + 8 * r, lane / 4};
}
// C and D (16x8, f32): element i.
Element c_element(int lane, int i) {
  return {lane / 4 + 8 * (i >> 1), 2 * (lane % 4) + (i & 1)};
}
std::uint16_t half_of(std::uint32_t reg, int h) {
  return std::uint16_t(reg >> (16 * h));
}

void complete_mma(Fiber* const (&lanes)[32]) {
  const auto input = MmaInput(lanes[0]->arg);
  double a[16][16], b[16][8];
  float c[16][8];
  for (int l = 0; l < 32; ++l) {
    const auto& ops = *reinterpret_cast<const MmaOperands*>(lanes[l]->value);
    for (int r = 0; r < 4; ++r)
      for (int h = 0; h < 2; ++h) {
        const Element e = a_element(l, r, h);
        a[e.row][e.col] = input_value(input, half_of(ops.a[r], h));
      }
    for (int r = 0; r < 2; ++r)
      for (int h = 0; h < 2; ++h) {
        const Element e = b_element(l, r, h);
        b[e.row][e.col] = input_value(input, half_of(ops.b[r], h));
      }
    for (int i = 0; i < 4; ++i) {
      const Element e = c_element(l, i);
      c[e.row][e.col] = ops.c[i];
    }
  }
  for (int l = 0; l < 32; ++l) {
    auto& ops = *reinterpret_cast<MmaOperands*>(lanes[l]->value);
    for (int i = 0; i < 4; ++i) {
      const Element e = c_element(l, i);
      float acc = c[e.row][e.col];
      for (int k0 = 0; k0 < 16; k0 += kBlock) {
        double products[kBlock];
        for (int k = 0; k < kBlock; ++k) products[k] = a[e.row][k0 + k] * b[k0 + k][e.col];
        acc = aligned_truncated_sum(acc, products, kBlock);
      }
      ops.d[i] = acc;
    }
  }
}

// ---- ldmatrix -------------------------------------------------------------
struct LdmatrixLane {
  const void* row;
  std::uint32_t* out;
};
constexpr std::size_t kRowBytes = 16;  // eight b16 elements

void complete_ldmatrix(Fiber* const (&lanes)[32]) {
  const int count = lanes[0]->arg & 0xf;
  const bool trans = lanes[0]->arg >> 4 & 1;
  for (int l = 0; l < 32; ++l) {
    const auto& me = *reinterpret_cast<const LdmatrixLane*>(lanes[l]->value);
    for (int m = 0; m < count; ++m) {
      std::uint32_t reg = 0;
      for (int h = 0; h < 2; ++h) {
        // element (row, col) of matrix m; the row's address is lane 8m+row's
        const int row = trans ? 2 * (l % 4) + h : l / 4;
        const int col = trans ? l / 4 : 2 * (l % 4) + h;
        const auto* source = static_cast<const std::uint16_t*>(
            reinterpret_cast<const LdmatrixLane*>(lanes[8 * m + row]->value)->row);
        reg |= std::uint32_t(source[col]) << (16 * h);
      }
      me.out[m] = reg;
    }
  }
}

std::string address_text(std::uintptr_t a) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#" PRIxPTR, a);
  return buf;
}

// A row of ldmatrix lies in the launch's shared memory: within the dynamic
// shared bytes the launch asked for, or the module's static shared arrays,
// and is 16-byte aligned.
void check_ldmatrix_row(const Fiber& me, std::uintptr_t a, std::uint64_t where) {
  const Launch& L = *runtime.launch;
  const bool dynamic = L.dynamic_lo && a >= L.dynamic_lo && a < L.dynamic_lo + kMaxDynamicShared;
  const std::uintptr_t lo = dynamic ? L.dynamic_lo : L.shared_lo;
  const std::uintptr_t hi = dynamic ? L.dynamic_lo + L.shared_bytes : L.shared_hi;
  // The message's head, built only for a hazard: this runs for every row.
  const auto head = [&] {
    return me_name(me) + " (lane " + std::to_string(me.lane) + ") gives ldmatrix the row address " +
           address_text(a) + " (" + describe_where(where) + ")";
  };
  if (a < lo || a + kRowBytes > hi) {
    if (dynamic)
      hazard("out of bounds", head() + ": its 16-byte row ends " +
                                  std::to_string(a + kRowBytes - hi) + " bytes past the launch's " +
                                  std::to_string(L.shared_bytes) +
                                  " bytes of dynamic shared memory");
    hazard("out of bounds", head() + ", which is not in the block's shared memory");
  }
  if (a % kRowBytes)
    hazard("misaligned access", head() + ", which is not 16-byte aligned (offset " +
                                    std::to_string(a % kRowBytes) + ")");
}

}  // namespace

void complete_tensor_op(WarpOp op, Fiber* const (&lanes)[32]) {
  if (op == WarpOp::mma)
    complete_mma(lanes);
  else
    complete_ldmatrix(lanes);
}

void mma_m16n8k16(MmaInput input, MmaOperands* lane, Site site) {
  if (!tls_current) {  // no warp outside a launch
    for (float& d : lane->d) d = std::numeric_limits<float>::quiet_NaN();
    return;
  }
  warp_collective(WarpOp::mma, 0xffffffffu, reinterpret_cast<std::uintptr_t>(lane), int(input), 32,
                  site);
}

void ldmatrix(int count, bool trans, const void* row, std::uint32_t* out, Site site) {
  Fiber* me = tls_current;
  if (!me) return;
  const std::uint64_t where = intern(site);
  // The lanes that give a row read it: its bytes are checked and counted
  // as this lane's 16-byte shared load.
  if (me->lane < std::uint32_t(8 * count)) {
    check_ldmatrix_row(*me, reinterpret_cast<std::uintptr_t>(row), where);
    on_access(row, kRowBytes, Access::read, reinterpret_cast<const void*>(where));
  }
  LdmatrixLane mine{row, out};
  warp_collective(WarpOp::ldmatrix, 0xffffffffu, reinterpret_cast<std::uintptr_t>(&mine),
                  count | int(trans) << 4, 32, site);
}

}  // namespace moacert::simt::detail
