// The format switch of the variants that run in f64 and f32 only (their
// compute type is the storage type): one RunFn from a kernel generic in T.
#pragma once

#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/registry.hpp"

namespace moacert::kernels::cpu {

// A RunFn calling run.template operator()<T>(p, in, out, opt) with T =
// double for f64 and float for f32; any other format throws, naming `who`
// ("rmsnorm cpu.fused").
template <class F>
RunFn f64_f32_run(std::string who, F run) {
  return [who = std::move(who), run](const Problem& p, std::span<const TensorRef> in,
                                     std::span<const TensorRef> out, const RunOptions& opt) {
    if (p.format == Format::f64) return run.template operator()<double>(p, in, out, opt);
    if (p.format == Format::f32) return run.template operator()<float>(p, in, out, opt);
    throw std::invalid_argument(who + ": format " + std::string(name(p.format)) +
                                " is not supported");
  };
}

}  // namespace moacert::kernels::cpu
