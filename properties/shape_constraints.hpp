// The extents `certify --shape` fixes (N=4096) or bounds (N=1..8192): per
// dimension of the op, a closed range; a dimension not named is free and
// drawn as without --shape. The generator draws inside the ranges, curated
// cases are clamped into them, and a token carries them, so that
// `reproduce` needs no --shape (docs/design.md#certify).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "reference/problem.hpp"

namespace moacert::properties {

// lo <= e <= hi; the default range is every extent. A kernel's envelope
// (kernels/envelope.hpp) narrows it further to a set of values or the
// multiples of a step; lo and hi are then admitted extents themselves
// (the smallest and the largest), so that a draw from lo stays inside.
struct ExtentRange {
  moa::extent_t lo = 1, hi = std::numeric_limits<moa::extent_t>::max();
  std::vector<moa::extent_t> values;  // ascending, in [lo, hi]; empty: every extent
  moa::extent_t multiple = 1;
  bool fixed() const { return lo == hi; }
  // Narrowed beyond [lo, hi]: a draw in [lo, hi] must be snapped (clamp).
  bool discrete() const { return !values.empty() || multiple != 1; }
  bool contains(moa::extent_t e) const {
    return lo <= e && e <= hi && e % multiple == 0 &&
           (values.empty() || std::binary_search(values.begin(), values.end(), e));
  }
  // The admitted extent nearest to e (the lower of two as near).
  moa::extent_t clamp(moa::extent_t e) const;
  friend bool operator==(const ExtentRange&, const ExtentRange&) = default;
};

// The Dims fields in a fixed order: a constraint's index in a token.
inline constexpr std::array<moa::extent_t Dims::*, 9> kDimFields = {
    &Dims::B, &Dims::H, &Dims::Hkv, &Dims::N, &Dims::M, &Dims::D, &Dims::T, &Dims::Dm, &Dims::F};

// The options a kernel's envelope supports besides extents
// (kernels::Envelope): a problem with an unsupported one is never drawn.
struct SupportedOptions {
  bool causal = true;         // causal masking
  bool non_causal = true;     // no masking
  bool grouped_heads = true;  // Hkv < H
  bool all() const { return causal && non_causal && grouped_heads; }
  friend bool operator==(const SupportedOptions&, const SupportedOptions&) = default;
};

struct ShapeConstraints {
  // By the index of the field in kDimFields; nullopt: free.
  std::array<std::optional<ExtentRange>, kDimFields.size()> ranges;
  SupportedOptions supported;  // the kernel's envelope; a token carries it

  bool empty() const {
    return supported.all() &&
           std::none_of(ranges.begin(), ranges.end(), [](const auto& r) { return r.has_value(); });
  }
  // The range of a field: its constraint, or every extent.
  ExtentRange range(moa::extent_t Dims::*field) const;
  bool constrained(moa::extent_t Dims::*field) const { return range(field) != ExtentRange{}; }
  void set(moa::extent_t Dims::*field, ExtentRange r);
  // True when every constrained extent of `d` lies in its range.
  bool admits(const Dims& d) const;
  // "N=4096,M=1..8192" in the op's axis names and order (dims_of); "" when empty.
  std::string str(Op op) const;
  // Throws moa::ShapeError, naming the op and what is wrong, unless some
  // problem of `op` satisfies the constraints: each constrained dimension
  // is one of the op's, an H in its range is a multiple of an Hkv in its
  // range, and the smallest extents in the ranges pass validate().
  void check(Op op) const;
  // `p` made supported, in the one place every drawn case passes through
  // (random, shrunk, curated, adjusted for a regime): causal set to the
  // one supported, and grouped heads made one head per key head (Hkv = H,
  // or H = Hkv when only Hkv is constrained, or the smallest extent both
  // ranges admit). Draws no randomness, so that a kernel supporting every
  // option sees the same cases as before.
  void into_supported(Problem& p) const;
  // The Hkv in its range of which some H in its range is a multiple, up to
  // `count` of them from the smallest up (none: the heads cannot be met).
  std::vector<moa::extent_t> head_groups(std::size_t count) const;
  // The k for which k·hkv lies in H's range (empty when lo > hi).
  ExtentRange head_multiples(moa::extent_t hkv) const;
  friend bool operator==(const ShapeConstraints&, const ShapeConstraints&) = default;
};

}  // namespace moacert::properties
