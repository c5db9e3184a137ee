// A priori error bounds (docs/bounds.md): for each output element of a
// case, a bound on |computed - exact| that holds for every correct kernel
// of the op in the case's format, whatever its summation order, tiling or
// online-softmax rescaling, given the stated constants (the error of the exp
// and log it uses). Evaluated for the actual inputs: condition quantities
// such as Σ_j P_ij |V_jd| come from the case itself.
#pragma once

#include <vector>

#include "oracle/selection.hpp"
#include "reference/arithmetic.hpp"
#include "reference/case.hpp"

namespace moacert::oracle {

struct BoundConstants {
  // Relative error of the exp and log a kernel may use, in units of the
  // accumulation format's u (2 ulp: SLEEF's u10 functions, Highway's Exp,
  // glibc and CUDA's expf all stay within it).
  double exp_error_u = 4;
  double log_error_u = 4;
  // What the kernel declares of its arithmetic (its variant's): rounded
  // accumulation by default; tensor-core accumulation and weights rounded
  // to storage raise the bounds as docs/bounds.md#tensor-cores derives.
  Arithmetic arithmetic;
};

// Per output tensor (ops-table order), per element in row-major logical
// order, an absolute error bound. Elements whose exact value is infinite
// (LSE of a row with no visible key) get bound 0: the kernel must match.
// With `selection` (the sampled oracle's selection), the elements of other rows
// may be left unbounded (0): attention.fwd, decode and mlp.swiglu bound
// only the selected rows (a bound costs what the row's oracle unit costs);
// attention.bwd and attention.fwdbwd the selected rows of dQ, dK and dV.
// A selected row's bound is bitwise the one without `selection`.
std::vector<std::vector<double>> apriori_bounds(const Case& c, const BoundConstants& k = {},
                                                const Selection* selection = nullptr);

}  // namespace moacert::oracle
