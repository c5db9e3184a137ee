// Reproduction tokens: a short printable string that names op, variant,
// format, rule, seed, case and shrink path, so that `moacert reproduce`
// re-creates the identical case, bit for bit, on any machine.
//
// A random case is RapidCheck's generator (gen_case_spec, of the token's
// generation and constraints) run with
// rc::Random({seed, index, 0, 0}) at `size`, then walked down its shrink
// tree by `path` (the index of the chosen shrink at each step). A curated
// case (index < 0) is the -index-1'th entry of curated_specs, walked down
// by `path` the same way through shrinkable_spec's tree (spec_shrinks.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "properties/case_gen.hpp"
#include "properties/check.hpp"

namespace moacert::properties {

struct Token {
  Op op = Op::attention_fwd;
  Format format = Format::f32;
  std::string variant;
  Rule rule;
  std::uint64_t seed = 0;
  std::int32_t index = 0;  // >= 0: random case; < 0: curated case -index-1
  int size = 0;            // RapidCheck size of a random case
  std::vector<std::uint32_t> path;
  std::vector<moa::extent_t> tiles;  // of the certified variant: the generator straddles them
  // The token's version, which is the generation of the generator that drew
  // its case (kGeneration): version-1 tokens keep naming the cases they
  // named. Version 1 carries no constraints.
  int version = kGeneration;
  ShapeConstraints shape;  // certify --shape
  // A case of the same certification, named as a token names its own (its
  // index, and a random case's size), drawn as drawn (no shrink path).
  struct Call {
    std::int32_t index = 0;
    int size = 0;
    bool operator==(const Call&) const = default;
  };
  // A failure that depends on earlier calls (a plugin's or worker's
  // process keeps state from one call to the next, docs/design.md#certify):
  // the calls that set it up, which a replay makes first, in order, in a
  // fresh process. Empty for every other token, which then encodes byte
  // for byte as before.
  std::vector<Call> setup;

  // What the token's generator draws from.
  GenSettings settings() const { return {tiles, shape, version, /*strided=*/true}; }

  std::string encode() const;
  // nullopt, with `why` set, when the text is not a token of this version.
  static std::optional<Token> decode(const std::string& text, std::string* why = nullptr);
};

// The curated edge cases of an op and format: each value family and layout
// family at its extremes (causal rows with no key, N = 1, N > M and N < M,
// tile straddles, MQA and GQA, decode lens 1 and L, ...).
// Under --shape, each is clamped into the ranges (docs/design.md#certify).
std::vector<CaseSpec> curated_specs(Op op, Format f, const GenSettings& settings);

// The case spec a token names (its generator, its shrink path), or nullopt
// when the path leads nowhere (a token from another version).
std::optional<CaseSpec> spec_of(const Token& t);

// The case of `t`'s certification that `call` names, as drawn.
std::optional<CaseSpec> spec_of(const Token& t, const Token::Call& call);

// The size RapidCheck's own runner would use for case `index` of `cases`.
int size_for(int index, int cases);

}  // namespace moacert::properties
