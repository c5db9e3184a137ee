#include "cli/budget.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/core.h>

#include "cli/commands.hpp"
#include "properties/ops/table.hpp"
#include "reference/named.hpp"
#include "simt/shadow_size.hpp"

namespace moacert::cli {

namespace {

// Variants whose kernels the emulator runs, in this process: kernels/cuda/'s
// simt.* ONFs.
bool emulated(const kernels::Variant& v) {
  return v.backend == "simt";
}

// The copies one run of `v` makes before it starts, in bytes: row-major
// copies of every input for a variant that reads only row-major tensors
// (properties::run_variant), else of the tiled ones (cpu::with_flat_layouts);
// the inputs and outputs again where the kernel runs in memory of its own
// (a plugin's or a worker's shared segment, the emulator's device memory);
// PyTorch's f32 copies of bf16 and f16 inputs, which it computes in f32;
// and the emulator's race shadow of every byte of its device memory, with
// the spare shadows it keeps (simt/shadow_size.hpp).
double run_copies(const kernels::Variant& v, const Problem& p, double in_bytes, double out_bytes,
                  const std::vector<moa::Layout>* layouts) {
  double tiled = in_bytes;
  if (layouts) {
    tiled = 0;
    const auto shapes = input_shapes(p);
    for (std::size_t k = 0; k < shapes.size() && k < layouts->size(); ++k)
      if (!(*layouts)[k].is_flat())
        tiled += element_count({shapes[k]}) * double(info(input_format(p, k)).bytes);
  }
  double copies = v.accepts_strided ? tiled : in_bytes;
  if (v.backend == "plugin" || v.backend == "worker" || v.backend == "simt")
    copies += in_bytes + out_bytes;
  if (emulated(v))
    copies += double(simt::kShadowBytesPerByte) * (in_bytes + out_bytes) +
              double(simt::kSpareShadowBytes);
  if (v.role == kernels::Role::torch && info(p.format).bytes == 2) copies += 2 * in_bytes;
  return copies;
}

}  // namespace

Footprint footprint(const Problem& given, const BudgetParts& parts) {
  Footprint f;
  // Each tensor's own bytes, in the formats the kernel declares
  // (docs/design.md#per-tensor-formats).
  Problem p = given;
  if (parts.variant) p.tensor_formats = as_taken(given, parts.variant->conventions).tensor_formats;
  const auto shapes = input_shapes(p);
  const auto out_shapes = output_shapes(p);
  auto bytes_of = [&](const moa::Shape& s, Format fmt) {
    return double(info(fmt).bytes) * element_count({s});
  };
  double in = 0, out = 0;
  for (std::size_t k = 0; k < shapes.size(); ++k)
    in += bytes_of(shapes[k], input_format(p, k));  // lens at the dtype's, as always
  for (std::size_t t = 0; t < out_shapes.size(); ++t)
    out += bytes_of(out_shapes[t], output_format(p, t));
  const double out_elements = element_count(out_shapes);
  if (!parts.variant) {
    f.tensors = 3 * (in + out);
  } else {
    // The case; the outputs each run keeps (the judged run's, the
    // determinism check's two, PyTorch's) and three doubles per output
    // element (the bounds, the allowances, PyTorch's errors); and the
    // largest of the passing copies: a run's, or a backward case's
    // generation, which holds the forward's o and lse twice (made, then
    // laid out as drawn).
    const kernels::Variant& v = *parts.variant;
    const int kept = 3 + (parts.beside ? 1 : 0);
    double forward_inputs = 0;
    for (std::string_view name : properties::property_op(p.op).forward_inputs)
      forward_inputs += bytes_of(shapes[input_position(p.op, name)], p.format_of(name));
    double passing = std::max(2 * forward_inputs, run_copies(v, p, in, out, parts.layouts));
    if (parts.beside)
      passing = std::max(passing, run_copies(*parts.beside, p, in, out, parts.layouts));
    f.tensors = in + kept * out + 3 * 8 * out_elements + passing;
  }
  if (parts.oracle) {
    f.oracle = oracle::memory_needed(p, parts.oracle_precision, parts.oracle_threads, parts.sample,
                                     parts.oracle_digits);
    f.answer = oracle::held_after(p, parts.oracle_digits);
  }
  if (parts.scratch) {
    for (const kernels::Variant* v : {parts.variant, parts.beside})
      if (v && v->cost) {
        // The emulator shadows the kernel's device scratch too.
        const double shadowed = emulated(*v) ? 1.0 + double(simt::kShadowBytesPerByte) : 1.0;
        f.kernel = std::max(f.kernel, shadowed * v->cost(p).peak_extra_bytes);
      }
  }
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
  if (b >= 1024.0 * 1024 * 1024 * 1024)
    return fmt::format("{:.1f} TiB", b / (1024.0 * 1024 * 1024 * 1024));
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.1f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.0f} B", b);
}

void check_budget(const Problem& p, std::uint64_t max_bytes, const std::string& what,
                  const BudgetParts& parts) {
  const Footprint f = footprint(p, parts);
  if (f.total() <= double(max_bytes)) return;
  if (f.oracle == 0 && f.kernel == 0) {
    throw UsageError(fmt::format("{} needs {} of tensors, over --max-memory {}", what,
                                 bytes_text(f.total()), bytes_text(double(max_bytes))));
  }
  std::string terms = "tensors " + bytes_text(f.tensors);
  if (f.oracle > 0 && f.kernel > 0) {
    terms += " + max(oracle " + bytes_text(f.oracle) + ", its scratch " + bytes_text(f.kernel) +
             " + the answer " + bytes_text(f.answer) + ")";
  } else if (f.oracle > 0) {
    terms += " + oracle " + bytes_text(f.oracle);
  } else if (f.kernel > 0) {
    terms += " + its scratch " + bytes_text(f.kernel);
  }
  throw UsageError(fmt::format("{} needs {} ({}), over --max-memory {}", what,
                               bytes_text(f.total()), terms, bytes_text(double(max_bytes))));
}

void check_budget_before_oracle(const Problem& p, std::uint64_t max_bytes, const std::string& what,
                                const BudgetParts& parts) {
  const auto refuse = [&](const Footprint& f, const std::string& terms) {
    return UsageError(fmt::format("{} needs over {} ({}), over --max-memory {}", what,
                                  bytes_text(f.total()), terms, bytes_text(double(max_bytes))));
  };
  // The tensors first: a variant's cost function may itself walk an axis
  // (the causal pairs of a query row block), too long past the budget.
  BudgetParts shape_only = parts;
  shape_only.oracle = false;
  shape_only.scratch = false;
  Footprint f = footprint(p, shape_only);
  const std::string tensors = "tensors " + bytes_text(f.tensors);
  if (f.total() > double(max_bytes))
    throw refuse(f, tensors + ", before its scratch and the oracle's part");
  shape_only.scratch = true;
  f = footprint(p, shape_only);
  if (f.total() > double(max_bytes))
    throw refuse(f,
                 tensors + " + its scratch " + bytes_text(f.kernel) + ", before the oracle's part");
}

}  // namespace moacert::cli
