#include "cli/budget.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdlib>

#include <fmt/core.h>

#include "cli/commands.hpp"

namespace moacert::cli {

namespace {

double elements(const std::vector<moa::Shape>& shapes) {
  double n = 0;
  for (const moa::Shape& s : shapes) {
    double e = 1;
    for (int k = 0; k < s.rank(); ++k) e *= double(s[std::size_t(k)]);
    n += e;
  }
  return n;
}

// The largest scratch one oracle unit holds (detail/units.hpp), in
// elements: a query row's scores, a kv group's probabilities and their
// gradients, a row's hidden layer, a batch's attention and MLP.
double unit_scratch(const Problem& p) {
  const Dims& d = p.dims;
  const double group = double(d.H) / double(std::max<moa::extent_t>(1, d.Hkv));
  switch (p.op) {
    case Op::attention_fwd:
    case Op::attention_decode:
      return 4.0 * double(d.M) + 2.0 * double(d.D);
    case Op::attention_bwd:
    case Op::attention_fwdbwd:
      return 4.0 * group * double(d.N) * double(d.M) + 4.0 * group * double(d.N) * double(d.D);
    case Op::rmsnorm:
      return 2.0 * double(d.D);
    case Op::mlp_swiglu:
      return 3.0 * double(d.F) + double(d.Dm);
    case Op::block:
      return 2.0 * double(d.H) * double(d.N) * double(d.N) +
             double(d.N) *
                 (4.0 * double(d.H) * double(d.D) + 3.0 * double(d.F) + 4.0 * double(d.Dm));
  }
  return 0;
}

}  // namespace

Footprint footprint(const Problem& p, int oracle_bits) {
  const double bytes = info(p.format).precision > 24 ? 8 : info(p.format).precision > 11 ? 4 : 2;
  const double in = elements(input_shapes(p)), out = elements(output_shapes(p));
  Footprint f;
  // The case, a row-major copy of its inputs, the outputs of two runs, and
  // a plugin's shared copy of all of them.
  f.tensors = bytes * (3 * in + 3 * out);
  // An mpfi_t holds two mpfr_t (32 bytes each) and their limbs.
  const double mpfi = 64 + 2 * 8 * std::ceil(oracle_bits / 64.0);
  const double threads = double(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  f.oracle = in * (mpfi + 16)  // MPFI and double-interval inputs
             + out * 80        // enclosures, DD, rounded value, bounds per element
             + threads * unit_scratch(p) * mpfi;
  return f;
}

std::uint64_t default_max_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::uint64_t(8) << 30;
  return std::uint64_t(pages) * std::uint64_t(page) / 2;
}

std::uint64_t parse_bytes(const std::string& text) {
  const auto bad = [&] {
    return UsageError("--max-memory '" + text + "' is not a size (e.g. 4G, 512M, 1000000)");
  };
  if (text.empty()) throw bad();
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  std::string unit(end);
  if (end == text.c_str() || !(x > 0) || !std::isfinite(x)) throw bad();
  double scale = 1;
  if (unit == "" || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KiB" || unit == "k")
    scale = 1024.0;
  else if (unit == "M" || unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TiB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    throw bad();
  const double b = x * scale;
  if (b >= 1.8e19) throw bad();
  return std::uint64_t(b);
}

std::string bytes_text(double b) {
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.1f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.0f} B", b);
}

void check_budget(const Problem& p, std::uint64_t max_bytes, const std::string& what,
                  bool with_oracle, double scratch_bytes) {
  const Footprint f = footprint(p);
  const double need = (with_oracle ? f.total() : f.tensors) + scratch_bytes;
  if (need <= double(max_bytes)) return;
  if (scratch_bytes > 0) {
    throw UsageError(fmt::format("{} needs {} (tensors {} + its scratch {}), over --max-memory {}",
                                 what, bytes_text(need), bytes_text(f.tensors),
                                 bytes_text(scratch_bytes), bytes_text(double(max_bytes))));
  }
  if (with_oracle) {
    throw UsageError(fmt::format("{} needs {} (tensors {} + oracle {}), over --max-memory {}", what,
                                 bytes_text(need), bytes_text(f.tensors), bytes_text(f.oracle),
                                 bytes_text(double(max_bytes))));
  }
  throw UsageError(fmt::format("{} needs {} of tensors, over --max-memory {}", what,
                               bytes_text(need), bytes_text(double(max_bytes))));
}

}  // namespace moacert::cli
