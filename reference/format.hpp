// The floating-point formats moacert certifies, and the 16-bit storage
// types. bf16 and f16 are storage formats: kernels load them into f32,
// accumulate in f32, and round the result back (docs/design.md, "Ops").
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace moacert {

enum class Format { f64, f32, bf16, f16 };

// The parameters of a binary floating-point format, as in IEEE 754:
// precision p (with the hidden bit), exponents emin..emax of normal numbers.
struct FormatInfo {
  Format format;
  std::string_view name;
  int precision;  // p
  int emin;
  int emax;
  int bytes;
};

constexpr FormatInfo info(Format f) {
  switch (f) {
    case Format::f64:
      return {f, "f64", 53, -1022, 1023, 8};
    case Format::f32:
      return {f, "f32", 24, -126, 127, 4};
    case Format::bf16:
      return {f, "bf16", 8, -126, 127, 2};
    case Format::f16:
      return {f, "f16", 11, -14, 15, 2};
  }
  return {f, "?", 0, 0, 0, 0};
}

constexpr std::string_view name(Format f) {
  return info(f).name;
}

inline constexpr Format kAllFormats[] = {Format::f64, Format::f32, Format::bf16, Format::f16};

inline std::optional<Format> parse_format(std::string_view s) {
  for (Format f : kAllFormats)
    if (name(f) == s) return f;
  return std::nullopt;
}

// bfloat16: the top half of an IEEE binary32.
struct bf16 {
  std::uint16_t bits = 0;

  bf16() = default;
  // Round to nearest, ties to even; NaN stays a (quiet) NaN.
  explicit bf16(float x) {
    std::uint32_t u = std::bit_cast<std::uint32_t>(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<std::uint16_t>((u >> 16) | 0x0040u);
      return;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    bits = static_cast<std::uint16_t>(u >> 16);
  }
  explicit operator float() const {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
  }
  // Correctly rounded from double: round to float with round-to-odd (float
  // has more than p + 2 bits, so the second rounding cannot go wrong), then
  // to nearest even.
  static bf16 from_double(double x) {
    float f = static_cast<float>(x);
    if (static_cast<double>(f) != x && x == x) {
      if (std::fabs(static_cast<double>(f)) > std::fabs(x))
        f = std::nextafter(f, 0.0f);                                   // truncate towards zero
      f = std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);  // mark inexact
    }
    return bf16(f);
  }
  static bf16 from_bits(std::uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }
};

// IEEE binary16, converted through the compiler's _Float16 (correctly
// rounded, subnormals included).
struct f16 {
  std::uint16_t bits = 0;

  f16() = default;
  explicit f16(float x) : bits(std::bit_cast<std::uint16_t>(static_cast<_Float16>(x))) {}
  explicit operator float() const { return static_cast<float>(std::bit_cast<_Float16>(bits)); }
  static f16 from_double(double x) {  // one rounding, double to binary16
    f16 h;
    h.bits = std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
    return h;
  }
  static f16 from_bits(std::uint16_t b) {
    f16 h;
    h.bits = b;
    return h;
  }
};

// The C++ storage type of each format.
template <Format F>
struct storage;
template <>
struct storage<Format::f64> {
  using type = double;
};
template <>
struct storage<Format::f32> {
  using type = float;
};
template <>
struct storage<Format::bf16> {
  using type = bf16;
};
template <>
struct storage<Format::f16> {
  using type = f16;
};
template <Format F>
using storage_t = typename storage<F>::type;

// The accumulation type of each format: f32 for the 16-bit storage formats.
template <Format F>
using accum_t = std::conditional_t<F == Format::f64, double, float>;

}  // namespace moacert
