// `moacert list [OP] [--shape ...] [--dtype F] [--causal]`: ops, variants,
// formats, which backends are present, and each variant's ONF cost (flops,
// bytes read and written, atomics, peak extra memory) on a problem: the
// op's default (its performance target's shape) or the one given.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "cli/commands.hpp"
#include "cli/shape.hpp"
#include "kernels/registry.hpp"

namespace moacert::cli {

namespace {

std::string join(const auto& items, auto&& to_string) {
  std::string s;
  for (const auto& x : items) {
    if (!s.empty()) s += ",";
    s += to_string(x);
  }
  return s;
}

struct ListArgs {
  std::string op;  // empty: every op
  std::string shape;
  std::string dtype = "f32";
  bool causal = false;
};

std::string si(double x, const char* unit) {
  if (x >= 1e12) return fmt::format("{:.4g} T{}", x / 1e12, unit);
  if (x >= 1e9) return fmt::format("{:.4g} G{}", x / 1e9, unit);
  if (x >= 1e6) return fmt::format("{:.4g} M{}", x / 1e6, unit);
  if (x >= 1e3) return fmt::format("{:.4g} k{}", x / 1e3, unit);
  return fmt::format("{:.4g} {}", x, unit);
}

void print_list(const ListArgs& a) {
  std::optional<Op> only;
  if (!a.op.empty()) {
    only = parse_op(a.op);
    if (!only) throw UsageError("list: unknown op '" + a.op + "' (moacert list shows the ops)");
  }
  const std::optional<Format> format = parse_format(a.dtype);
  if (!format) throw UsageError("list: unknown --dtype '" + a.dtype + "'");
  // Every problem is validated before anything is printed.
  std::vector<Problem> problems;
  for (const OpInfo& op : all_ops()) {
    Problem p;
    p.op = op.op;
    p.format = *format;
    p.dims = parse_shape(op.op, a.shape, "list");
    p.params.causal = a.causal;
    if (!only || *only == op.op) validate(p);  // std::invalid_argument: exit 2
    problems.push_back(p);
  }
  const auto& registry = kernels::Registry::builtin();
  const kernels::Backends b = kernels::backends();
  auto yes = [](bool present) { return present ? "present" : "absent"; };
  fmt::print("backends: cpu present, torch {}, cuda {}, mpi {}\n", yes(b.torch), yes(b.cuda),
             yes(b.mpi));
  fmt::print("formats: {}\n", join(kAllFormats, [](Format f) { return std::string(name(f)); }));
  for (std::size_t i = 0; i < all_ops().size(); ++i) {
    const OpInfo& op = all_ops()[i];
    if (only && *only != op.op) continue;
    const Problem& p = problems[i];
    auto str = [](std::string_view s) { return std::string(s); };
    fmt::print("\n{}  inputs {}  outputs {}\n", op.name, join(op.inputs, str),
               join(op.outputs, str));
    fmt::print("  cost per call at {} {}{}:\n", shape_text(op.op, p.dims), name(p.format),
               p.causal() ? " causal" : "");
    const auto variants = registry.of(op.op);
    if (variants.empty()) fmt::print("  (no variant in this build)\n");
    for (const kernels::Variant* v : variants) {
      fmt::print("  {:<16} formats {:<16} {:<9} {:<14} {}\n", v->name,
                 join(v->formats, [](Format f) { return std::string(name(f)); }),
                 v->accepts_strided ? "strided" : "contiguous",
                 v->deterministic ? "deterministic" : "racy", v->summary);
      if (v->cost) {
        const kernels::Cost c = v->cost(p);
        fmt::print("  {:<16} {}, read {}, written {}, {:.0f} atomics, peak extra {}\n", "",
                   si(c.flops, "FLOP"), si(c.bytes_read, "B"), si(c.bytes_written, "B"), c.atomics,
                   si(c.peak_extra_bytes, "B"));
      }
    }
  }
}

}  // namespace

void add_list(CLI::App& app, int& status) {
  auto args = std::make_shared<ListArgs>();
  CLI::App* cmd = app.add_subcommand(
      "list", "ops, variants, formats, backends present, and each variant's cost on a problem");
  cmd->add_option("op", args->op, "only this op");
  cmd->add_option("--shape", args->shape,
                  "the problem whose cost is printed, over each op's default (bench's), e.g. "
                  "N=4096,M=4096");
  cmd->add_option("--dtype", args->dtype, "f64, f32, bf16 or f16 (default f32)");
  cmd->add_flag("--causal", args->causal, "a causal problem");
  cmd->callback([&status, args] {
    print_list(*args);
    status = 0;
  });
}

}  // namespace moacert::cli
