// What one kernel supports, as it declares it: the extents of each axis of
// its op, causal masking, grouped heads, and the device it runs on. A
// plugin of ABI 2 declares it in its kernel table, a worker in its
// handshake (docs/worker-protocol.md), a built-in variant by its compiled
// maxima. certify, reproduce and bench draw and run only problems inside
// it, as inside `--shape` (docs/design.md#envelope); a kernel that refuses
// a problem inside its own envelope fails.
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reference/problem.hpp"

namespace moacert::kernels {

// The extents one axis may take: a closed range, narrowed to a set of
// values (`D in {64, 128, 256}`) and to the multiples of a step
// (`N % 16 == 0`) when given.
struct AxisEnvelope {
  moa::extent_t lo = 1, hi = std::numeric_limits<moa::extent_t>::max();
  std::vector<moa::extent_t> values;  // ascending; empty: every extent of [lo, hi]
  moa::extent_t multiple = 1;

  bool admits(moa::extent_t e) const;
  // The admitted extents in ascending order, up to `count` of them from
  // the smallest up (none: the axis admits nothing).
  std::vector<moa::extent_t> smallest(std::size_t count) const;
  // "64..128", "{64, 128}", "1..32768, % 16": as messages and `list` show it.
  std::string str() const;
  friend bool operator==(const AxisEnvelope&, const AxisEnvelope&) = default;
};

enum class Device { cpu, cuda };

// "cpu", "cuda".
std::string_view name(Device d);

struct Envelope {
  // By the op's axis name as its signature spells it ("N", "L" for
  // decode's cache length, "Dm"), each named at most once; an axis not
  // named is free.
  std::vector<std::pair<std::string, AxisEnvelope>> axes;
  bool causal = true;         // causal masking (attention.fwd, bwd, fwdbwd)
  bool non_causal = true;     // no masking
  bool grouped_heads = true;  // Hkv < H: grouped-query and multi-query attention
  Device device = Device::cpu;

  // Every problem is inside: no axis narrowed, every option supported.
  bool unlimited() const;
  // "" when `p` lies inside, else why not in one phrase naming the axis or
  // the option ("D = 129 is not in {64, 128}", "causal is not supported").
  std::string why_outside(const Problem& p) const;
  // Throws std::invalid_argument, naming `kernel` and the field, when the
  // envelope is malformed (a range with lo > hi or below 1, a step below
  // 1, values outside the range or not ascending), names an axis `op`
  // does not have, or admits no problem of `op` (an axis admitting no
  // extent; neither causal nor non-causal for a masked op).
  void check(Op op, const std::string& kernel) const;
  // One line: "D in {64, 128}; N in 1..32768, % 16; no GQA/MQA; cuda";
  // "any problem" when unlimited.
  std::string str() const;
  friend bool operator==(const Envelope&, const Envelope&) = default;
};

// The JSON of docs/design.md#envelope, as certificates record it and a
// worker's handshake declares it:
//   {"axes": {"D": {"values": [64, 128]}, "N": {"min": 1, "max": 32768,
//    "multiple": 16}}, "causal": true, "non_causal": true,
//    "grouped_heads": true, "device": "cuda"}
// Every member is optional and defaults as Envelope does.
void to_json(nlohmann::json& j, const Envelope& e);
// Throws std::invalid_argument naming the member for JSON of the wrong
// shape (an unknown member, a number that is not a positive integer, an
// unknown device); semantic checks are Envelope::check's.
Envelope envelope_from_json(const nlohmann::json& j);

}  // namespace moacert::kernels
