#include "oracle/detail/forward_memo.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "reference/named.hpp"

namespace moacert::oracle::detail {

namespace {

constexpr const char* kInputs[] = {"q", "k", "v"};

std::mutex& memo_mutex() {
  static std::mutex m;
  return m;
}

std::shared_ptr<const ForwardMemo>& kept_memo() {
  static std::shared_ptr<const ForwardMemo> memo;
  return memo;
}

const AnyTensor& input(const Case& c, const char* name) {
  return c.inputs.at(input_position(c.problem.op, name));
}

// Every element the same double, bit for bit (NaNs and -0 included),
// whatever the two layouts.
bool same_values(const AnyTensor& a, const AnyTensor& b) {
  const moa::Shape s = a.shape();
  if (!(s == b.shape())) return false;
  const moa::extent_t width = s[s.rank() - 1];
  if (width == 0) return true;
  std::vector<double> ra(static_cast<std::size_t>(width)), rb(ra.size());
  for (moa::extent_t r = 0; r < a.size() / width; ++r) {
    a.get_rows(r, 1, ra.data());
    b.get_rows(r, 1, rb.data());
    if (std::memcmp(ra.data(), rb.data(), ra.size() * sizeof(double)) != 0) return false;
  }
  return true;
}

}  // namespace

std::shared_ptr<ForwardMemo> start_forward_memo(const Case& fwd) {
  auto memo = std::make_shared<ForwardMemo>();
  memo->problem = fwd.problem;
  for (const char* name : kInputs) {  // compact copies: forward_memo_bytes counts them
    const AnyTensor& t = input(fwd, name);
    memo->inputs.push_back(t.relayout(moa::Layout::row_major(t.shape())));
  }
  const Dims& d = fwd.problem.dims;
  const auto rows = static_cast<std::size_t>(d.B * d.H * d.N);
  memo->rows.resize(rows * static_cast<std::size_t>(memo->row_doubles()));
  memo->done.assign(rows, 0);
  return memo;
}

void keep_forward_memo(std::shared_ptr<ForwardMemo> memo) {
  if (memo && std::find(memo->done.begin(), memo->done.end(), 0) != memo->done.end()) memo.reset();
  const std::lock_guard lock(memo_mutex());
  kept_memo() = std::move(memo);
}

std::shared_ptr<const ForwardMemo> forward_memo_for(const Case& c) {
  std::shared_ptr<const ForwardMemo> memo;
  {
    const std::lock_guard lock(memo_mutex());
    memo = kept_memo();
  }
  if (!memo) return nullptr;
  const Problem &p = c.problem, &f = memo->problem;
  if (!(p.dims == f.dims) || p.scale() != f.scale() || !(p.mask() == f.mask())) return nullptr;
  for (std::size_t k = 0; k < std::size(kInputs); ++k)
    if (!same_values(input(c, kInputs[k]), memo->inputs[k])) return nullptr;
  return memo;
}

double forward_memo_bytes(const Problem& p) {
  const Dims& d = p.dims;
  const double rows = double(d.B) * double(d.H) * double(d.N);
  const double elements =
      double(d.B) * (double(d.H) * double(d.N) + 2 * double(d.Hkv) * double(d.M)) * double(d.D);
  return rows * (double(2 * (d.D + 2)) * sizeof(double) + 1) +
         elements * double(info(p.format).bytes);
}

}  // namespace moacert::oracle::detail
