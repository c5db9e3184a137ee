#include "properties/token.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

#include <rapidcheck.h>

#include "properties/ops/table.hpp"
#include "properties/spec_shrinks.hpp"

namespace moacert::properties {

namespace {

// The prefix names the token family; the first byte its version (1 to
// kGeneration: the generation of its case).
constexpr const char* kPrefix = "mc1.";
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void put_varint(std::vector<std::uint8_t>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(std::uint8_t(v | 0x80));
    v >>= 7;
  }
  out.push_back(std::uint8_t(v));
}

struct Reader {
  const std::vector<std::uint8_t>& in;
  std::size_t pos = 0;
  bool ok = true;
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= in.size()) break;
      const std::uint8_t b = in[pos++];
      v |= std::uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    ok = false;
    return 0;
  }
  std::uint8_t byte() {
    if (pos >= in.size()) {
      ok = false;
      return 0;
    }
    return in[pos++];
  }
};

std::string base64url(const std::vector<std::uint8_t>& bytes) {
  std::string s;
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::uint8_t b : bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      s += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) s += kAlphabet[(acc << (6 - bits)) & 63];
  return s;
}

std::optional<std::vector<std::uint8_t>> unbase64url(const std::string& s) {
  std::vector<std::uint8_t> out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const char* p = std::strchr(kAlphabet, c);
    if (!p || c == '\0') return std::nullopt;
    acc = (acc << 6) | std::uint32_t(p - kAlphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(std::uint8_t(acc >> bits));
    }
  }
  return out;
}

std::uint64_t zigzag(std::int64_t v) {
  return (std::uint64_t(v) << 1) ^ std::uint64_t(v >> 63);
}
std::int64_t unzigzag(std::uint64_t v) {
  return std::int64_t(v >> 1) ^ -std::int64_t(v & 1);
}

}  // namespace

// The high bit of a constraint's field byte: a range narrowed to values or
// a step follows.
constexpr std::uint8_t kDiscrete = 0x80;
// In place of a field byte: the options a kernel's envelope refuses follow,
// one bit each (kRefused's order). A token of a kernel supporting every
// option has no such entry, and is byte for byte as before.
constexpr std::uint8_t kSupportedTag = 0x7F;
// After the variant's name: the setup calls of a failure that depends on
// earlier calls (Token::setup), their count, then (index, size) each.
constexpr std::uint8_t kSetupTag = 0x01;
constexpr std::uint64_t kMaxSetup = 100000;
constexpr std::array<bool SupportedOptions::*, 3> kRefused = {
    &SupportedOptions::causal, &SupportedOptions::non_causal, &SupportedOptions::grouped_heads};

std::string Token::encode() const {
  std::vector<std::uint8_t> b{std::uint8_t(version), std::uint8_t(op), std::uint8_t(format),
                              std::uint8_t(rule.kind)};
  std::uint64_t k;
  std::memcpy(&k, &rule.k, sizeof k);
  put_varint(b, k);
  put_varint(b, seed);
  put_varint(b, zigzag(index));
  put_varint(b, std::uint64_t(size));
  put_varint(b, path.size());
  for (std::uint32_t p : path) put_varint(b, p);
  put_varint(b, tiles.size());
  for (moa::extent_t x : tiles) put_varint(b, std::uint64_t(x));
  if (version >= 2) {  // the constraints: count, then (field, lo, hi) each
    std::uint64_t count = 0;
    for (const auto& r : shape.ranges) count += r.has_value();
    put_varint(b, count + (shape.supported.all() ? 0 : 1));
    if (!shape.supported.all()) {
      std::uint64_t refused = 0;
      for (std::size_t option = 0; option < kRefused.size(); ++option)
        if (!(shape.supported.*kRefused[option])) refused |= std::uint64_t{1} << option;
      b.push_back(kSupportedTag);
      put_varint(b, refused);
    }
    for (std::size_t field = 0; field < shape.ranges.size(); ++field) {
      if (!shape.ranges[field]) continue;
      const ExtentRange& r = *shape.ranges[field];
      // A kernel's values or step (its envelope): the field's byte with its
      // high bit set, then (multiple, count, values...) after (lo, hi).
      // A token without them is byte for byte as before.
      b.push_back(std::uint8_t(field | (r.discrete() ? kDiscrete : 0)));
      put_varint(b, std::uint64_t(r.lo));
      put_varint(b, std::uint64_t(r.hi));
      if (r.discrete()) {
        put_varint(b, std::uint64_t(r.multiple));
        put_varint(b, r.values.size());
        for (moa::extent_t v : r.values) put_varint(b, std::uint64_t(v));
      }
    }
  }
  put_varint(b, variant.size());
  b.insert(b.end(), variant.begin(), variant.end());
  if (!setup.empty()) {
    b.push_back(kSetupTag);
    put_varint(b, setup.size());
    for (const Call& c : setup) {
      put_varint(b, zigzag(c.index));
      put_varint(b, std::uint64_t(c.size));
    }
  }
  return kPrefix + base64url(b);
}

std::optional<Token> Token::decode(const std::string& text, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<Token> {
    if (why) *why = w;
    return std::nullopt;
  };
  if (text.rfind(kPrefix, 0) != 0)
    return fail("a token starts with '" + std::string(kPrefix) + "'");
  const auto bytes = unbase64url(text.substr(std::strlen(kPrefix)));
  if (!bytes) return fail("a token holds only letters, digits, '-' and '_' after its prefix");
  Reader r{*bytes};
  Token t;
  t.version = r.byte();
  if (t.version < 1 || t.version > kGeneration) return fail("token of another version");
  const std::uint8_t op = r.byte(), fmt = r.byte(), rule = r.byte();
  if (op >= all_ops().size() || fmt > 3 || rule > 2)
    return fail("token names an unknown op, format or rule");
  t.op = Op(op);
  t.format = Format(fmt);
  t.rule.kind = Rule::Kind(rule);
  const std::uint64_t k = r.varint();
  std::memcpy(&t.rule.k, &k, sizeof k);
  t.seed = r.varint();
  const std::int64_t index = unzigzag(r.varint());
  const std::uint64_t size = r.varint(), n = r.varint();
  if (!r.ok || index < INT32_MIN || index > INT32_MAX || size > 1000 || n > 100000)
    return fail("token is truncated or corrupt");
  t.index = std::int32_t(index);
  t.size = int(size);
  for (std::uint64_t i = 0; i < n && r.ok; ++i) t.path.push_back(std::uint32_t(r.varint()));
  const std::uint64_t ntiles = r.varint();
  if (!r.ok || ntiles > 64) return fail("token is truncated or corrupt");
  for (std::uint64_t i = 0; i < ntiles && r.ok; ++i) {
    const std::uint64_t x = r.varint();
    if (x == 0 || x > (1u << 20)) return fail("token is truncated or corrupt");
    t.tiles.push_back(moa::extent_t(x));
  }
  if (t.version >= 2) {
    const std::uint64_t count = r.varint();
    if (!r.ok || count > t.shape.ranges.size() + 1) return fail("token is truncated or corrupt");
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint8_t tagged = r.byte(), field = tagged & std::uint8_t(~kDiscrete);
      if (tagged == kSupportedTag) {
        const std::uint64_t refused = r.varint();
        if (!r.ok || i != 0 || refused == 0 || refused >= (std::uint64_t{1} << kRefused.size()))
          return fail("token is truncated or corrupt");
        for (std::size_t option = 0; option < kRefused.size(); ++option)
          t.shape.supported.*kRefused[option] = !(refused >> option & 1);
        continue;
      }
      const std::uint64_t lo = r.varint(), hi = r.varint();
      if (!r.ok || field >= t.shape.ranges.size() || t.shape.ranges[field] || lo < 1 || hi < lo ||
          hi > std::uint64_t(ExtentRange{}.hi))
        return fail("token is truncated or corrupt");
      ExtentRange range{moa::extent_t(lo), moa::extent_t(hi)};
      if (tagged & kDiscrete) {
        const std::uint64_t multiple = r.varint(), n_values = r.varint();
        if (!r.ok || multiple < 1 || multiple > hi || n_values > 4096)
          return fail("token is truncated or corrupt");
        range.multiple = moa::extent_t(multiple);
        for (std::uint64_t v = 0; v < n_values && r.ok; ++v)
          range.values.push_back(moa::extent_t(r.varint()));
        // Admitted bounds and ascending admitted values, as certify makes them.
        bool ok = r.ok && range.discrete() && range.contains(range.lo) && range.contains(range.hi);
        for (std::size_t v = 0; ok && v < range.values.size(); ++v)
          ok = range.contains(range.values[v]) && (v == 0 || range.values[v - 1] < range.values[v]);
        if (!ok) return fail("token is truncated or corrupt");
      }
      t.shape.ranges[field] = std::move(range);
    }
    try {
      t.shape.check(t.op);
    } catch (const std::exception& e) {
      return fail(std::string("token's --shape: ") + e.what());
    }
  }
  const std::uint64_t len = r.varint();
  if (!r.ok || len > 4096 || r.pos + len > bytes->size())
    return fail("token is truncated or corrupt");
  t.variant.assign(bytes->begin() + std::ptrdiff_t(r.pos),
                   bytes->begin() + std::ptrdiff_t(r.pos + len));
  r.pos += len;
  if (r.pos < bytes->size()) {
    const std::uint64_t n_setup = r.byte() == kSetupTag ? r.varint() : 0;
    if (!r.ok || n_setup == 0 || n_setup > kMaxSetup) return fail("token is truncated or corrupt");
    for (std::uint64_t i = 0; i < n_setup && r.ok; ++i) {
      const std::int64_t at = unzigzag(r.varint());
      const std::uint64_t at_size = r.varint();
      if (at < INT32_MIN || at > INT32_MAX || at_size > 1000)
        return fail("token is truncated or corrupt");
      t.setup.push_back({std::int32_t(at), int(at_size)});
    }
    if (!r.ok || r.pos != bytes->size()) return fail("token is truncated or corrupt");
  }
  // One text per token: trailing characters that make no byte are refused.
  if (t.encode() != text) return fail("token is truncated or corrupt");
  return t;
}

int size_for(int index, int cases) {
  // As RapidCheck's runner: sizes sweep 0..100 over the cases.
  return cases <= 1 ? 100 : std::min(100, index * 100 / (cases - 1));
}

namespace {

// The case a token's index names, with its shrink tree: a random case's is
// RapidCheck's, a curated case's shrinkable_spec's.
std::optional<rc::Shrinkable<CaseSpec>> drawn_case(const Token& t) {
  if (t.index < 0) {
    const auto curated = curated_specs(t.op, t.format, t.settings());
    const std::size_t k = std::size_t(-std::int64_t(t.index) - 1);
    if (k >= curated.size()) return std::nullopt;
    return shrinkable_spec(curated[k], t.shape);
  }
  const rc::Gen<CaseSpec> gen = gen_case_spec(t.op, t.format, t.settings());
  return gen(rc::Random({t.seed, std::uint64_t(t.index), 0, 0}), t.size);
}

}  // namespace

std::optional<CaseSpec> spec_of(const Token& t) {
  std::optional<rc::Shrinkable<CaseSpec>> drawn = drawn_case(t);
  if (!drawn) return std::nullopt;
  rc::Shrinkable<CaseSpec> s = *drawn;
  for (std::uint32_t step : t.path) {
    auto shrinks = s.shrinks();
    std::optional<rc::Shrinkable<CaseSpec>> chosen;
    for (std::uint32_t i = 0; i <= step; ++i) {
      auto next = shrinks.next();
      if (!next) return std::nullopt;
      if (i == step) chosen = *next;
    }
    s = *chosen;
  }
  return s.value();
}

std::optional<CaseSpec> spec_of(const Token& t, const Token::Call& call) {
  Token drawn = t;
  drawn.index = call.index;
  drawn.size = call.size;
  drawn.path.clear();
  drawn.setup.clear();
  return spec_of(drawn);
}

namespace {

// A curated spec clamped into --shape's ranges: each constrained extent to
// its nearest in range, the heads to the nearest group the ranges allow,
// decode's lens to the cache length (the last one to all of it).
void clamp_into(CaseSpec& s, const ShapeConstraints& shape) {
  if (shape.empty()) return;
  Dims& d = s.problem.dims;
  for (std::size_t k = 0; k < kDimFields.size(); ++k)
    if (shape.ranges[k]) d.*kDimFields[k] = shape.ranges[k]->clamp(d.*kDimFields[k]);
  if (d.H % d.Hkv != 0) {
    const std::vector<moa::extent_t> groups = shape.head_groups(64);
    d.Hkv = *std::min_element(groups.begin(), groups.end(), [&](moa::extent_t a, moa::extent_t b) {
      return std::abs(a - d.Hkv) < std::abs(b - d.Hkv);
    });
    d.H = shape.head_multiples(d.Hkv).clamp(d.H / d.Hkv) * d.Hkv;
  }
  if (const auto& retie = property_op(s.problem.op).retie) retie(s);
}

}  // namespace

std::vector<CaseSpec> curated_specs(Op op, Format f, const GenSettings& settings) {
  // Each family of the generators at its extremes, realised through the
  // generator itself at the largest size with a fixed Random, then pinned.
  std::vector<CaseSpec> out;
  const std::vector<moa::extent_t>& tiles = settings.tiles;
  GenSettings strided = settings;
  strided.strided = true;
  const rc::Gen<CaseSpec> gen = gen_case_spec(op, f, strided);
  const moa::extent_t tile = tiles.empty() ? 16 : tiles.back();
  const PropertyOp& po = property_op(op);
  std::uint64_t k = 0;
  // Their own stream, so that the other curated cases stay as they were.
  std::uint64_t first = 0;
  for (Values family : po.curated_first) {
    if (settings.generation < first_generation(family)) continue;
    CaseSpec s = gen(rc::Random({0xF1A7, first++, 0, 0}), 100).value();
    s.values = family;
    s.problem.params.scale = 0;              // 1/sqrt(D)
    po.shape_for_regime(s, settings.shape);  // decode's lens too: the whole cache
    clamp_into(s, settings.shape);
    settings.shape.into_supported(s.problem);
    s.layouts.clear();
    for (const moa::Shape& shape : input_shapes(s.problem))
      s.layouts.push_back(moa::make_layout(moa::LayoutKind::row_major, shape));
    s.kinds.assign(s.layouts.size(), moa::LayoutKind::row_major);
    out.push_back(s);
  }
  for (Values family : po.families) {
    CaseSpec s = gen(rc::Random({0xC0FFEE, k++, 0, 0}), 100).value();
    s.values = family;
    if (family == Values::tiny_scale) s.problem.params.scale = 0x1p-20;
    if (po.curate) po.curate(s, k, tile);
    clamp_into(s, settings.shape);
    settings.shape.into_supported(s.problem);
    // Layouts follow the shapes just pinned.
    s.layouts.clear();
    const auto shapes = input_shapes(s.problem);
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      // Broadcast (batch axis only) and column-major survive; every other
      // kind becomes row-major.
      moa::LayoutKind& kind = s.kinds[i];
      if (kind != moa::LayoutKind::broadcast && kind != moa::LayoutKind::col_major)
        kind = moa::LayoutKind::row_major;
      s.layouts.push_back(moa::make_layout(kind, shapes[i]));
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace moacert::properties
