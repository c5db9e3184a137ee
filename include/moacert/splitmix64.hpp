// SplitMix64 (Steele, Lea and Flood, 2014), written once: the integer
// stream that decides every generated case and token (properties/case_gen.cpp),
// the emulator's block order and interleaving (simt/), and the plots'
// reservoir keys (properties/plot_samples.cpp). Plain integer arithmetic,
// so a value is the same bit for bit on every platform and standard library
// (std::uniform_int_distribution is not specified bit for bit, and a token
// must replay anywhere). Not installed: no installed header includes it.
#pragma once

#include <cstdint>

namespace moacert {

// The stream's step: its state advances by the golden-ratio increment.
inline constexpr std::uint64_t kSplitMix64Gamma = 0x9e3779b97f4a7c15ull;

// The finaliser (a bijection of 64-bit words), applied to each state.
constexpr std::uint64_t splitmix64_finalise(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The stream: each value is the finalised state after one step.
struct SplitMix64 {
  std::uint64_t state;
  constexpr std::uint64_t next() { return splitmix64_finalise(state += kSplitMix64Gamma); }
};

// The first value of the stream seeded with x: a hash of x.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  return SplitMix64{x}.next();
}

// The reference implementation's first two values from seed 1234567.
static_assert(SplitMix64{1234567}.next() == 6457827717110365317ull);
static_assert([] {
  SplitMix64 s{1234567};
  s.next();
  return s.next();
}() == 3203168211198807973ull);

}  // namespace moacert
