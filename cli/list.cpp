// `moacert list`: ops, variants, formats, and which backends are present.
#include <string>

#include <fmt/core.h>

#include "cli/commands.hpp"
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

void print_list() {
  const auto& registry = kernels::Registry::builtin();
  const kernels::Backends b = kernels::backends();
  auto yes = [](bool present) { return present ? "present" : "absent"; };
  fmt::print("backends: cpu present, torch {}, cuda {}, mpi {}\n", yes(b.torch), yes(b.cuda),
             yes(b.mpi));
  fmt::print("formats: {}\n", join(kAllFormats, [](Format f) { return std::string(name(f)); }));
  for (const OpInfo& op : all_ops()) {
    auto str = [](std::string_view s) { return std::string(s); };
    fmt::print("\n{}  inputs {}  outputs {}\n", op.name, join(op.inputs, str),
               join(op.outputs, str));
    const auto variants = registry.of(op.op);
    if (variants.empty()) fmt::print("  (no variant in this build)\n");
    for (const kernels::Variant* v : variants) {
      fmt::print("  {:<16} formats {:<16} {:<9} {:<14} {}\n", v->name,
                 join(v->formats, [](Format f) { return std::string(name(f)); }),
                 v->accepts_strided ? "strided" : "contiguous",
                 v->deterministic ? "deterministic" : "racy", v->summary);
    }
  }
}

}  // namespace

void add_list(CLI::App& app, int& status) {
  CLI::App* cmd =
      app.add_subcommand("list", "ops, variants, formats, and which backends are present");
  cmd->callback([&status] {
    print_list();
    status = 0;
  });
}

}  // namespace moacert::cli
