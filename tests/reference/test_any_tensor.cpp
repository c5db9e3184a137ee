// AnyTensor's row reads and writes (reference/tensor.hpp, get_row,
// get_rows, set_row): a row read or written at once is, value for value,
// get() or set() along the last axis, for every storage type and every kind
// of layout (flat strides read directly, tiled layouts element by element);
// and its storage (reference/tensor_storage.hpp).
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

// The tests' tensor: every storage type, every kind of layout (flat
// strides in several orders, padded, tiled).
const Shape kShape{3, 4, 10};
constexpr DType kTypes[] = {DType::f64, DType::f32, DType::bf16, DType::f16, DType::i64};
std::vector<Layout> every_kind_of_layout() {
  return {Layout::row_major(kShape), Layout::col_major(kShape), Layout::permuted(kShape, {2, 0, 1}),
          Layout::padded(kShape, Shape{0, 1, 3}), Layout::tiled(kShape, Shape{1, 2, 5})};
}

TEST(AnyTensor, GetRowIsGetAlongTheLastAxis) {
  const Shape shape = kShape;
  for (const DType type : kTypes) {
    for (const Layout& layout : every_kind_of_layout()) {
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

// set_row stores what set() stores, element by element: the same rounding
// (values between representable ones) through every layout.
TEST(AnyTensor, SetRowIsSetAlongTheLastAxis) {
  const Shape shape = kShape;
  for (const DType type : kTypes) {
    for (const Layout& layout : every_kind_of_layout()) {
      SCOPED_TRACE(std::to_string(int(type)) + " " + layout.str());
      AnyTensor by_row(type, layout), by_element(type, layout);
      std::vector<double> row(static_cast<std::size_t>(shape[2]));
      double x = 1.0 / 3;  // inexact in every type: each store rounds
      for (extent_t a = 0; a < shape[0]; ++a) {
        for (extent_t b = 0; b < shape[1]; ++b) {
          for (extent_t e = 0; e < shape[2]; ++e) {
            row[std::size_t(e)] = x *= -1.37;
            by_element.set(moa::Index{a, b, e}, row[std::size_t(e)]);
          }
          by_row.set_row(moa::Index{a, b, 0}, shape[2], row.data());
        }
      }
      for (const moa::Index& i : moa::iota(shape))
        EXPECT_EQ(std::bit_cast<std::uint64_t>(by_row.get(i)),
                  std::bit_cast<std::uint64_t>(by_element.get(i)))
            << i.str();
    }
  }
}

// Storage below and from TensorStorage::kMappedFrom (heap, mapped pages):
// zero-filled, 64-byte aligned, copied by value, emptied by a move.
TEST(AnyTensor, StorageIsZeroedAlignedAndCopiedByValue) {
  for (const extent_t n : {extent_t(5), extent_t(TensorStorage::kMappedFrom / 4 + 3)}) {
    SCOPED_TRACE(n);
    AnyTensor t(DType::f32, Layout::row_major(Shape{n}));
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(t.data()) % 64, 0u);
    EXPECT_GE(t.storage_bytes(), std::size_t(n) * 4);
    const auto* bytes = static_cast<const unsigned char*>(t.data());
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < t.storage_bytes(); ++i) nonzero += bytes[i] != 0;
    EXPECT_EQ(nonzero, 0u);
    t.set(moa::Index{n - 1}, 2.5);
    AnyTensor copy = t;
    t.set(moa::Index{n - 1}, 7);
    EXPECT_EQ(copy.get(moa::Index{n - 1}), 2.5);
    EXPECT_NE(copy.data(), t.data());
    AnyTensor moved = std::move(copy);
    EXPECT_EQ(moved.get(moa::Index{n - 1}), 2.5);
    copy = moved;  // assignable again after the move
    EXPECT_EQ(copy.get(moa::Index{n - 1}), 2.5);
  }
}

}  // namespace
}  // namespace moacert
