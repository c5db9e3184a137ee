// A case's values are its stream's draws in ι's order, one after another
// through the inputs, whichever layout stores them and however many
// threads draw them: tensors of 2^20 elements and more are drawn row by
// row on every thread, each row's stream started at its own state
// (properties/case_gen.cpp), and must be bit for bit the one-thread stream
// that tokens were recorded with.
#include <gtest/gtest.h>

#include <omp.h>

#include <cstdint>
#include <vector>

#include "include/moacert/splitmix64.hpp"
#include "properties/case_gen.hpp"

namespace moacert::properties {
namespace {

// The generator's draws as case_gen.cpp defines them: U[-1, 1) from the
// top 53 bits, normal as four uniforms (Irwin-Hall, scaled).
struct Expected {
  SplitMix64 stream;
  double uniform() { return double(stream.next() >> 11) * 0x1p-52 - 1.0; }
  double normal() { return (uniform() + uniform() + uniform() + uniform()) * 0.8660254037844386; }
};

// mlp.swiglu at T=2, Dm=F=1024: each weight has 2^20 elements (drawn on
// the threads), x 2048 (drawn on one). Its inputs under uniform and normal
// values take no factor, so each element is its draw, rounded to `f`.
CaseSpec mlp_spec(Format f, Values values, bool column_major_w1) {
  CaseSpec spec;
  spec.problem.op = Op::mlp_swiglu;
  spec.problem.format = f;
  spec.problem.dims = {.T = 2, .Dm = 1024, .F = 1024};
  spec.values = values;
  spec.seed = 5;
  for (const moa::Shape& s : input_shapes(spec.problem)) {
    const bool col = column_major_w1 && spec.layouts.size() == 1;
    spec.kinds.push_back(col ? moa::LayoutKind::col_major : moa::LayoutKind::row_major);
    spec.layouts.push_back(col ? moa::Layout::col_major(s) : moa::Layout::row_major(s));
  }
  return spec;
}

// How many elements of `c` differ from the stream drawn one at a time.
std::int64_t differing(const Case& c, const CaseSpec& spec) {
  Expected e{{spec.seed * 0x2545f4914f6cdd1dull + 1}};
  std::int64_t wrong = 0;
  for (const AnyTensor& t : c.inputs) {
    AnyTensor want(t.dtype(), moa::Layout::row_major(t.shape()));
    for (const moa::Index& i : moa::iota(t.shape()))
      want.set(i, spec.values == Values::normal ? e.normal() : e.uniform());
    for (const moa::Index& i : moa::iota(t.shape())) wrong += t.get(i) != want.get(i);
  }
  return wrong;
}

TEST(CaseValues, AreTheStreamInIotaOrderOnEveryThreadCount) {
  for (Format f : {Format::f64, Format::f32, Format::bf16})
    for (Values values : {Values::uniform, Values::normal})
      for (bool column_major : {false, true})
        for (int threads : {1, 2, 3}) {
          omp_set_num_threads(threads);
          const CaseSpec spec = mlp_spec(f, values, column_major);
          EXPECT_EQ(differing(build_case(spec), spec), 0)
              << name(f) << (values == Values::normal ? " normal" : " uniform")
              << (column_major ? " w1 column-major" : "") << ", " << threads << " threads";
        }
}

}  // namespace
}  // namespace moacert::properties
