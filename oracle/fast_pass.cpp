// The first pass (docs/oracle.md#first-pass): the DNF instantiated with
// FastInterval, intervals of doubles with directed rounding. This file is
// compiled with -frounding-math -ffp-contract=off so that the compiler
// neither folds nor contracts operations whose rounding matters.
#include <cfenv>
#include <stdexcept>

#include "oracle/detail/fast_interval.hpp"
#include "oracle/detail/passes.hpp"
#include "oracle/detail/units.hpp"

namespace moacert::oracle::detail {

namespace {

// The pass relies on the compiler keeping each operation's rounding; a
// build that folded -((-x)·y) into x·y would lose the lower bounds. Check
// it once per pass on values the compiler cannot see.
void check_directed_rounding() {
  volatile double one = 1, three = 3;
  const FastInterval third = FastInterval(one) / FastInterval(three);
  const FastInterval sum = FastInterval(one) + FastInterval(1e-30 * three);
  if (!(third.lo < third.hi) || !(sum.lo < sum.hi)) {
    throw std::logic_error("oracle: directed rounding is not in effect in the fast pass");
  }
}

}  // namespace

void fast_pass(const Case& c, std::span<const Unit> units, int threads, const FastSink& sink) {
  for (const Unit& u : units) {
    if (u.kind == UnitKind::batch) {
      throw std::logic_error("oracle: block has no first pass (see passes.hpp)");
    }
  }
  const Inputs<FastInterval> in = make_inputs<FastInterval>(c);
  const auto n = static_cast<std::int64_t>(units.size());
  bool failed = false;
  std::string error;
#pragma omp parallel num_threads(thread_count(threads))
  {
    UpwardRounding upward;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t u = 0; u < n; ++u) {
      try {
        if (u == 0) check_directed_rounding();
        run_unit(c.problem, in, units[static_cast<std::size_t>(u)],
                 [&](int output, moa::extent_t flat, const FastInterval& x) {
                   sink(static_cast<std::size_t>(u), output, flat, x.lo, x.hi);
                 });
      } catch (const std::exception& e) {
#pragma omp critical(moacert_oracle_fast_error)
        {
          if (!failed) error = e.what();
          failed = true;
        }
      }
    }
  }
  if (failed) throw std::logic_error(error);
}

}  // namespace moacert::oracle::detail
