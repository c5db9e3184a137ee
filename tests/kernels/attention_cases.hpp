// Attention shapes shared by the backward and fused kernel tests, each with
// the layout kind its inputs and outputs take.
#pragma once

#include <ostream>
#include <sstream>
#include <string>
#include <tuple>

#include "tests/support/harness.hpp"

namespace moacert::test {

struct AttnCase {
  AttnShape shape;
  LayoutKind layout;
};

inline std::ostream& operator<<(std::ostream& os, const AttnCase& c) {
  const AttnShape& s = c.shape;
  return os << "B" << s.B << "_H" << s.H << "_Hkv" << s.Hkv << "_N" << s.N << "_M" << s.M << "_D"
            << s.D << (s.causal ? "_causal" : "") << "_scale" << s.scale << "_" << name(c.layout);
}

// N not a multiple of any tile, N > M and N < M with causal (rows with no
// visible key when N > M), MHA, GQA, MQA, odd D, every layout kind.
inline const AttnCase kAttnCases[] = {
    {{1, 2, 2, 37, 37, 16, false, 0}, LayoutKind::row_major},  // MHA, tail tiles
    {{2, 4, 2, 70, 45, 8, true, 0}, LayoutKind::permuted},     // GQA, causal N > M
    {{1, 3, 1, 20, 77, 12, true, 0}, LayoutKind::col_major},   // MQA, causal N < M
    {{1, 2, 1, 65, 130, 5, false, 0.3}, LayoutKind::padded},   // odd D, any scale
    {{1, 2, 2, 9, 3, 4, true, 1.7}, LayoutKind::padded},       // most rows see no key
    {{1, 1, 1, 130, 70, 64, true, 0}, LayoutKind::row_major},  // two tiles each way, D = 64
};

// A test name for a (format, case) parameter.
inline std::string attn_param_name(
    const ::testing::TestParamInfo<std::tuple<Format, AttnCase>>& param) {
  std::ostringstream os;
  os << name(std::get<0>(param.param)) << "_" << std::get<1>(param.param);
  return param_name(os.str());
}

}  // namespace moacert::test
