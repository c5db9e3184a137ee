#include "cli/budget.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdlib>

#include <fmt/core.h>

#include "cli/commands.hpp"

namespace moacert::cli {

Footprint footprint(const Problem& p, const BudgetParts& parts) {
  Footprint f;
  f.tensors = double(info(p.format).bytes) *
              (3 * element_count(input_shapes(p)) + 3 * element_count(output_shapes(p)));
  if (parts.oracle)
    f.oracle = oracle::memory_needed(p, parts.oracle_precision, parts.oracle_threads, parts.sample,
                                     parts.oracle_digits);
  if (parts.variant && parts.variant->cost) f.kernel = parts.variant->cost(p).peak_extra_bytes;
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
  if (f.oracle > 0) terms += " + oracle " + bytes_text(f.oracle);
  if (f.kernel > 0) terms += " + its scratch " + bytes_text(f.kernel);
  throw UsageError(fmt::format("{} needs {} ({}), over --max-memory {}", what,
                               bytes_text(f.total()), terms, bytes_text(double(max_bytes))));
}

void check_budget_before_oracle(const Problem& p, std::uint64_t max_bytes, const std::string& what,
                                const kernels::Variant& variant) {
  const auto refuse = [&](const Footprint& f, const std::string& terms) {
    return UsageError(fmt::format("{} needs over {} ({}), over --max-memory {}", what,
                                  bytes_text(f.total()), terms, bytes_text(double(max_bytes))));
  };
  // The tensors first: a variant's cost function may itself walk an axis
  // (the causal pairs of a query row block), too long past the budget.
  Footprint f = footprint(p, {.oracle = false});
  const std::string tensors = "tensors " + bytes_text(f.tensors);
  if (f.total() > double(max_bytes))
    throw refuse(f, tensors + ", before its scratch and the oracle's part");
  f = footprint(p, {.oracle = false, .variant = &variant});
  if (f.total() > double(max_bytes))
    throw refuse(f,
                 tensors + " + its scratch " + bytes_text(f.kernel) + ", before the oracle's part");
}

}  // namespace moacert::cli
