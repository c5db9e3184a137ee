#include "oracle/memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "oracle/detail/units.hpp"

namespace moacert::oracle {

double memory_needed(const Problem& p, int max_precision, int threads) {
  // An mpfi_t holds two mpfr_t (32 bytes each) and their limbs.
  const double mpfi = 64 + 2 * 8 * std::ceil(max_precision / 64.0);
  // The first pass's interval: two doubles, or two double-doubles for f64
  // targets, whose ends the driver also keeps per output element.
  const bool dd = p.format == Format::f64;
  const double interval = dd ? 32 : 16;
  const double per_output = 80 + (dd ? 32 : 0);  // enclosure, DD, rounded value, bound
  const double workers =
      threads > 0 ? threads : double(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  return element_count(input_shapes(p)) * (mpfi + interval) +
         element_count(output_shapes(p)) * per_output +
         workers * detail::unit_scratch_elements(p) * mpfi;
}

}  // namespace moacert::oracle
