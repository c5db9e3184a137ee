// For the fuzz build only (scripts/fuzz.sh, force-included): Debian's
// clang 14 has no _Float16 arithmetic type on x86-64 (clang 15 has). This
// stand-in converts through clang's storage type __fp16, which rounds once
// to nearest even like _Float16; the parsers need nothing more.
#pragma once

#include <cstdint>
#include <cstring>

struct moacert_fuzz_half {
  std::uint16_t bits;
  moacert_fuzz_half() = default;
  moacert_fuzz_half(float x) {
    const __fp16 h = static_cast<__fp16>(x);
    std::memcpy(&bits, &h, sizeof bits);
  }
  moacert_fuzz_half(double x) {
    const __fp16 h = static_cast<__fp16>(x);
    std::memcpy(&bits, &h, sizeof bits);
  }
  explicit operator float() const {
    __fp16 h;
    std::memcpy(&h, &bits, sizeof bits);
    return static_cast<float>(h);
  }
  explicit operator double() const { return static_cast<double>(static_cast<float>(*this)); }
};
