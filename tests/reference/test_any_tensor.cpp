// AnyTensor's row reads (reference/tensor.hpp, get_row, get_rows): a row
// read at once is, value for value, get() along the last axis, for every storage type
// and every kind of layout (flat strides read directly, tiled layouts
// element by element).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/moa/moa.hpp"
#include "reference/tensor.hpp"

namespace moacert {
namespace {

using moa::extent_t;
using moa::Layout;
using moa::Shape;

TEST(AnyTensor, GetRowIsGetAlongTheLastAxis) {
  const Shape shape{3, 4, 10};
  const std::vector<Layout> layouts{
      Layout::row_major(shape), Layout::col_major(shape), Layout::permuted(shape, {2, 0, 1}),
      Layout::padded(shape, Shape{0, 1, 3}), Layout::tiled(shape, Shape{1, 2, 5})};
  for (const DType type : {DType::f64, DType::f32, DType::bf16, DType::f16, DType::i64}) {
    for (const Layout& layout : layouts) {
      SCOPED_TRACE(std::to_string(int(type)) + " " + layout.str());
      AnyTensor t(type, layout);
      double x = 0.3;  // distinct values, exact in every type after set()
      for (const moa::Index& i : moa::iota(shape))
        t.set(i, (x += 1.25) * (type == DType::i64 ? 4 : 1));
      for (extent_t a = 0; a < shape[0]; ++a) {
        for (extent_t b = 0; b < shape[1]; ++b) {
          std::vector<double> row(static_cast<std::size_t>(shape[2]));
          t.get_row(moa::Index{a, b, 0}, shape[2], row.data());
          for (extent_t e = 0; e < shape[2]; ++e)
            EXPECT_EQ(std::bit_cast<std::uint64_t>(row[std::size_t(e)]),
                      std::bit_cast<std::uint64_t>(t.get(moa::Index{a, b, e})))
                << a << "," << b << "," << e;
        }
      }
      // Rows 5 .. 10 of the (12, 10) flattening: rows (1, 1) .. (2, 2).
      std::vector<double> rows(60);
      t.get_rows(5, 6, rows.data());
      for (extent_t r = 0; r < 6; ++r)
        for (extent_t e = 0; e < shape[2]; ++e)
          EXPECT_EQ(rows[std::size_t(r * shape[2] + e)],
                    t.get(moa::Index{(5 + r) / 4, (5 + r) % 4, e}))
              << "row " << 5 + r << ", " << e;
      // From the middle of a row, as a part of it.
      std::vector<double> part(4);
      t.get_row(moa::Index{2, 3, 5}, 4, part.data());
      for (extent_t e = 0; e < 4; ++e)
        EXPECT_EQ(part[std::size_t(e)], t.get(moa::Index{2, 3, 5 + e}));
    }
  }
}

}  // namespace
}  // namespace moacert
