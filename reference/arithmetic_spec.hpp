// The text of a declared arithmetic (docs/design.md#arithmetic), the one
// grammar that a plugin's `arithmetic` field, a worker's handshake, the
// Python package and `--arithmetic-at-most` all speak:
//
//   standard
//   sum=tensor_core, round.P=storage
//   sum.PV=f16, exp=4ulp, ftz=both
//
// Items are separated by commas (or semicolons); `sum=MODE` names every
// contraction, `sum.NAME=MODE` one (MODE: rounded, tensor_core, tf32, f16,
// bf16), `round.NAME=FORMAT` an intermediate (FORMAT: f32, f16, bf16,
// storage), `FUNCTION=Kulp` an elementary function's error (K finite,
// >= 0), `ftz=inputs|outputs|both` subnormals flushed. Which names an op
// has: its ArithmeticVocabulary (reference/ops.hpp).
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "reference/arithmetic.hpp"
#include "reference/ops.hpp"

namespace moacert {

inline constexpr std::string_view kAccumulationNames[] = {"rounded", "tensor_core", "tf32", "f16",
                                                          "bf16"};
inline constexpr std::string_view kRoundingNames[] = {"f32", "f16", "bf16", "storage"};
inline constexpr std::string_view kFlushNames[] = {"none", "inputs", "outputs", "both"};

inline std::string_view name(Accumulation a) {
  return kAccumulationNames[static_cast<int>(a)];
}
inline std::string_view name(Rounding r) {
  return kRoundingNames[static_cast<int>(r)];
}
inline std::string_view name(Flush f) {
  return kFlushNames[static_cast<int>(f)];
}

namespace detail {

template <class Enum, std::size_t N>
std::optional<Enum> parse_enum(std::string_view s, const std::string_view (&names)[N]) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == s) return static_cast<Enum>(i);
  return std::nullopt;
}

inline std::string_view trimmed(std::string_view s) {
  const std::size_t first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

template <std::size_t N>
std::string one_of(const std::string_view (&names)[N]) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) out += (i ? ", " : "") + std::string(names[i]);
  return out;
}

inline bool listed(const std::vector<std::string_view>& names, std::string_view s) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

inline std::string listing(const std::vector<std::string_view>& names) {
  if (names.empty()) return "none";
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + std::string(names[i]);
  return out;
}

}  // namespace detail

// The arithmetic `spec` declares, checked against `op`'s vocabulary.
// Throws std::invalid_argument, one line naming the item at fault (the
// caller prefixes the kernel's name).
inline Arithmetic parse_arithmetic(std::string_view spec, Op op) {
  using detail::trimmed;
  const ArithmeticVocabulary& vocabulary = info(op).arithmetic;
  const std::string on = " (" + std::string(info(op).name) + ")";
  Arithmetic a;
  std::string text(spec);
  std::replace(text.begin(), text.end(), ';', ',');
  if (trimmed(text) == "standard" || trimmed(text).empty()) return a;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trimmed(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) throw std::invalid_argument("arithmetic: an empty item in '" + text + "'");
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      throw std::invalid_argument("arithmetic: '" + std::string(item) + "' is not NAME=VALUE");
    const std::string_view key = trimmed(item.substr(0, eq)), value = trimmed(item.substr(eq + 1));
    const std::string field = "arithmetic field '" + std::string(key) + "'";
    const std::size_t dot = key.find('.');
    const std::string_view head = key.substr(0, dot);
    const std::string_view what = dot == std::string_view::npos ? "" : key.substr(dot + 1);
    if (head == "sum") {
      const auto mode = detail::parse_enum<Accumulation>(value, kAccumulationNames);
      if (!mode)
        throw std::invalid_argument(field + ": '" + std::string(value) + "' is not one of " +
                                    detail::one_of(kAccumulationNames));
      if (what.empty()) {
        if (*mode != Accumulation::rounded && *mode != Accumulation::tensor_core)
          throw std::invalid_argument(field +
                                      ": every contraction at once takes rounded or "
                                      "tensor_core; name one (sum.NAME=" +
                                      std::string(value) + ") among " +
                                      detail::listing(vocabulary.contractions) + on);
        a.accumulation = *mode;
      } else {
        if (!detail::listed(vocabulary.contractions, what))
          throw std::invalid_argument(field + ": the op has no contraction '" + std::string(what) +
                                      "' with a bound for it; it has " +
                                      detail::listing(vocabulary.contractions) + on);
        if (*mode == Accumulation::tf32 && !vocabulary.tf32)
          throw std::invalid_argument(field + ": no bound for TF32 operands" + on);
        a.contractions[std::string(what)] = *mode;
      }
    } else if (head == "round") {
      if (!detail::listed(vocabulary.intermediates, what))
        throw std::invalid_argument(field + ": the op has no intermediate '" + std::string(what) +
                                    "' with a bound for its rounding; it has " +
                                    detail::listing(vocabulary.intermediates) + on);
      const auto to = detail::parse_enum<Rounding>(value, kRoundingNames);
      if (!to)
        throw std::invalid_argument(field + ": '" + std::string(value) + "' is not one of " +
                                    detail::one_of(kRoundingNames));
      a.rounded[std::string(what)] = *to;
    } else if (head == "ftz" && what.empty()) {
      const auto f = detail::parse_enum<Flush>(value, kFlushNames);
      if (!f)
        throw std::invalid_argument(field + ": '" + std::string(value) + "' is not one of " +
                                    detail::one_of(kFlushNames));
      if ((f == Flush::inputs || f == Flush::both) && !vocabulary.flush_inputs)
        throw std::invalid_argument(field + ": no bound for flushed inputs" + on);
      if ((f == Flush::outputs || f == Flush::both) && !vocabulary.flush_outputs)
        throw std::invalid_argument(field + ": no bound for flushed outputs" + on);
      a.flush = *f;
    } else if (what.empty() && detail::listed(vocabulary.functions, head)) {
      std::string_view number = value;
      for (std::string_view unit : {"ulps", "ulp"})
        if (number.ends_with(unit)) {
          number.remove_suffix(unit.size());
          break;
        }
      number = trimmed(number);
      double ulps = 0;
      const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), ulps);
      if (ec != std::errc{} || end != number.data() + number.size() || !std::isfinite(ulps) ||
          ulps < 0)
        throw std::invalid_argument(field + ": '" + std::string(value) +
                                    "' is not a finite, non-negative count of ulps (e.g. 2ulp)");
      a.function_ulps[std::string(head)] = ulps;
    } else {
      throw std::invalid_argument(
          field + ": not in the vocabulary of " + std::string(info(op).name) +
          " (sum, sum.NAME, round.NAME, ftz, or a function: " +
          detail::listing(vocabulary.functions) + "; docs/design.md#arithmetic)");
    }
  }
  return a;
}

// The canonical text of `a`: "standard", or its items in a fixed order
// (sum, sum.NAME, round.NAME, functions, ftz), which parse_arithmetic
// reads back to `a`.
inline std::string to_string(const Arithmetic& a) {
  std::vector<std::string> items;
  if (a.accumulation != Accumulation::rounded)
    items.push_back("sum=" + std::string(name(a.accumulation)));
  for (const auto& [c, mode] : a.contractions)
    items.push_back("sum." + c + "=" + std::string(name(mode)));
  for (const auto& [i, to] : a.rounded) items.push_back("round." + i + "=" + std::string(name(to)));
  for (const auto& [f, ulps] : a.function_ulps) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, ulps);
    items.push_back(f + "=" + std::string(buf, ec == std::errc{} ? end : buf) + "ulp");
  }
  if (a.flush != Flush::none) items.push_back("ftz=" + std::string(name(a.flush)));
  if (items.empty()) return "standard";
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out;
}

namespace detail {

// Bits of significand an intermediate keeps (more: tighter), for ordering.
inline int kept_bits(std::optional<Rounding> r, Format storage) {
  if (!r) return 64;
  switch (*r) {
    case Rounding::f32:
      return 24;
    case Rounding::f16:
      return 11;
    case Rounding::bf16:
      return 8;
    case Rounding::storage:
      return info(storage).precision;
  }
  return 0;
}

// The standard model's ulps of `function` (docs/bounds.md#declared-arithmetic).
inline double standard_ulps(std::string_view function) {
  return function == "exp" || function == "log" ? 2 : 0.5;
}

}  // namespace detail

// The first freedom of `a` that goes past `limit` (a looser accumulation,
// a rounding to fewer bits, more ulps, more flushing), named as the
// declaration's item, in a call of format `storage`; nullopt when `a` is
// within `limit`.
inline std::optional<std::string> beyond(const Arithmetic& a, const Arithmetic& limit,
                                         Format storage) {
  if (a.accumulation > limit.accumulation) return "sum=" + std::string(name(a.accumulation));
  std::vector<std::string> contractions;
  for (const auto& [c, mode] : a.contractions) contractions.push_back(c);
  for (const auto& [c, mode] : limit.contractions) contractions.push_back(c);
  for (const std::string& c : contractions)
    if (a.accumulation_of(c) > limit.accumulation_of(c))
      return "sum." + c + "=" + std::string(name(a.accumulation_of(c)));
  for (const auto& [i, to] : a.rounded)
    if (detail::kept_bits(to, storage) < detail::kept_bits(limit.rounding_of(i), storage))
      return "round." + i + "=" + std::string(name(to));
  for (const auto& [f, ulps] : a.function_ulps)
    if (ulps > limit.ulps_of(f).value_or(detail::standard_ulps(f)))
      return f + "=" + to_string(Arithmetic{.function_ulps = {{f, ulps}}}).substr(f.size() + 1);
  const bool more_inputs = a.flushes_inputs() && !limit.flushes_inputs();
  const bool more_outputs = a.flushes_outputs() && !limit.flushes_outputs();
  if (more_inputs || more_outputs) return "ftz=" + std::string(name(a.flush));
  return std::nullopt;
}

}  // namespace moacert
