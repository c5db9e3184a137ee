// The first pass (docs/oracle.md#first-pass): the DNF instantiated with
// FastInterval, intervals of doubles with directed rounding, its reductions
// vectorised (fast_reductions.cpp); and the reference pass, the same DNF
// with scalar loops and MPFR's exp. This file is compiled with
// -frounding-math -ffp-contract=off so that the compiler neither folds nor
// contracts operations whose rounding matters.
#include <atomic>
#include <cfenv>
#include <stdexcept>

#include "oracle/detail/fast_interval.hpp"
#include "oracle/detail/forward_memo.hpp"
#include "oracle/detail/passes.hpp"
#include "oracle/detail/units.hpp"

namespace moacert::oracle::detail {

namespace {

// The pass relies on the compiler keeping each operation's rounding; a
// build that folded -((-x)·y) into x·y would lose the lower bounds. Check
// it once per pass on values the compiler cannot see, scalar and vector
// operations both (a dot product of inexact products: 3 · 0.1).
void check_directed_rounding() {
  volatile double one = 1, three = 3, tenth = 0.1;
  const FastInterval third = FastInterval(one) / FastInterval(three);
  const FastInterval sum = FastInterval(one) + FastInterval(1e-30 * three);
  constexpr int n = 16;  // a few vectors of any target
  FastInterval threes[n], tenths[n], dot;
  for (int k = 0; k < n; ++k) {
    threes[k] = FastInterval(three);
    tenths[k] = FastInterval(tenth);
  }
  interval_dots(threes, tenths, n, 1, n, &dot);
  if (!(third.lo < third.hi) || !(sum.lo < sum.hi) || !(dot.lo < dot.hi)) {
    throw std::logic_error("oracle: directed rounding is not in effect in the fast pass");
  }
}

// Sets the calling thread's FirstPassKind while alive.
class PassKind {
 public:
  explicit PassKind(FirstPassKind k) : saved_(first_pass_kind()) { first_pass_kind() = k; }
  ~PassKind() { first_pass_kind() = saved_; }
  PassKind(const PassKind&) = delete;
  PassKind& operator=(const PassKind&) = delete;

 private:
  FirstPassKind saved_;
};

// Memo row r's interval x (0 .. D - 1: O_i's, D and D + 1: shift and sum).
template <class Double>
Double* memo_interval(Double* row, extent_t x) {
  return row + 2 * x;
}

// Stores the forward rows of `run` (consecutive rows of one head) in the
// memo, and marks them filled.
void keep_rows(ForwardMemo& memo, std::span<const Unit> run,
               const dnf::ForwardRows<FastInterval>& f) {
  const Dims& d = memo.problem.dims;
  for (std::size_t k = 0; k < run.size(); ++k) {
    const extent_t r = (run[k].a * d.H + run[k].b) * d.N + run[k].c;
    double* row = memo.rows.data() + r * memo.row_doubles();
    auto put = [&](extent_t x, const FastInterval& v) {
      memo_interval(row, x)[0] = v.lo;
      memo_interval(row, x)[1] = v.hi;
    };
    for (extent_t x = 0; x < d.D; ++x) put(x, f.o[k * std::size_t(d.D) + std::size_t(x)]);
    put(d.D, f.normalisers[k].shift);
    put(d.D + 1, f.normalisers[k].sum);
    memo.done[std::size_t(r)] = 1;
  }
}

// The forward rows a bwd_key_rows unit u asks of the memo (its heads
// counted within its kv head's group), as attention_fwd_rows gave them.
dnf::GivenForwardRows<FastInterval> given_rows(const ForwardMemo& memo, const Unit& u,
                                               std::atomic<std::int64_t>& taken) {
  return [&memo, &taken, b = u.a, g = u.b](extent_t hh, extent_t i0, extent_t R) {
    taken += R;
    const Dims& d = memo.problem.dims;
    const extent_t h = g * (d.H / d.Hkv) + hh;
    dnf::ForwardRows<FastInterval> f;
    for (extent_t n = 0; n < R; ++n) {
      const double* row = memo.rows.data() + ((b * d.H + h) * d.N + i0 + n) * memo.row_doubles();
      auto get = [&](extent_t x) {
        return FastInterval(memo_interval(row, x)[0], memo_interval(row, x)[1]);
      };
      for (extent_t x = 0; x < d.D; ++x) f.o.push_back(get(x));
      f.normalisers.push_back({get(d.D), get(d.D + 1)});
    }
    return std::optional(std::move(f));
  };
}

// `keep`: the memo this pass fills (attention.fwd, every row), or null;
// `given`: the memo its key rows take, or null, counting the rows taken in
// `taken`.
void run_pass(const Case& c, std::span<const Unit> units, int threads, const FastSink& sink,
              FirstPassKind kind, ForwardMemo* keep = nullptr, const ForwardMemo* given = nullptr,
              std::atomic<std::int64_t>* taken = nullptr) {
  for (const Unit& u : units) {
    if (u.kind == UnitKind::batch) {
      throw std::logic_error("oracle: block has no first pass (see passes.hpp)");
    }
  }
  const int team = thread_count(threads);
  // mlp.swiglu's rows: all at once, the weights streamed (fast_mlp.cpp).
  if (kind == FirstPassKind::vectorised && !units.empty() && units[0].kind == UnitKind::mlp_row) {
    {
      UpwardRounding upward;
      check_directed_rounding();
    }
    fast_mlp_rows(c, units, team, sink);
    return;
  }
  // One run of units at a time (for_each_chunk): their rows converted, then
  // the run's units spread over the threads.
  const Conversion converts = Conversion::every_read;  // no op streams at this pass
  const double limit =
      chunk_limit(largest_unit(c.problem, units, converts), team, double(sizeof(FastInterval)));
  bool failed = false;
  std::string error;
  Inputs<FastInterval> in;  // each run's, its storage lent to the next (make_inputs)
  for_each_chunk(c.problem, units, converts, limit, [&](std::size_t first, std::size_t count) {
    if (failed) return;
    in = make_inputs<FastInterval>(c, units.subspan(first, count), converts, std::move(in));
    // The chunk's units in runs (forward_run: consecutive forward rows of
    // one head run as one call), {first unit, count}.
    std::vector<std::pair<std::size_t, std::size_t>> runs;
    for (std::size_t u = first; u < first + count; u += runs.back().second)
      runs.emplace_back(u, forward_run(units, u, first + count));
    const auto run_count = static_cast<std::int64_t>(runs.size());
#pragma omp parallel num_threads(team)
    {
      UpwardRounding upward;
      PassKind pass_kind(kind);
#pragma omp for schedule(dynamic, 1)
      for (std::int64_t t = 0; t < run_count; ++t) {
        try {
          if (t == 0) check_directed_rounding();
          const auto [at, n] = runs[static_cast<std::size_t>(t)];
          auto emit = [&](std::size_t k, int output, moa::extent_t flat, const FastInterval& x) {
            sink(at + k, output, flat, x.lo, x.hi);
          };
          const std::span<const Unit> run = units.subspan(at, n);
          if (run[0].kind == UnitKind::fwd_row) {
            std::function<void(const dnf::ForwardRows<FastInterval>&)> kept;
            if (keep)
              kept = [&](const dnf::ForwardRows<FastInterval>& f) { keep_rows(*keep, run, f); };
            run_forward_rows(c.problem, in, run, emit, kept);
          } else {
            const bool takes = given && run[0].kind == UnitKind::bwd_key_rows;
            run_unit(
                c.problem, in, run[0],
                [&](int output, moa::extent_t flat, const FastInterval& x) {
                  emit(0, output, flat, x);
                },
                takes ? given_rows(*given, run[0], *taken) : dnf::GivenForwardRows<FastInterval>{});
          }
        } catch (const std::exception& e) {
#pragma omp critical(moacert_oracle_fast_error)
          {
            if (!failed) error = e.what();
            failed = true;
          }
        }
      }
    }
  });
  if (failed) throw std::logic_error(error);
}

}  // namespace

FirstPassKind& first_pass_kind() {
  thread_local FirstPassKind kind = FirstPassKind::vectorised;
  return kind;
}

void fast_pass(const Case& c, std::span<const Unit> units, int threads, const FastSink& sink) {
  run_pass(c, units, threads, sink, FirstPassKind::vectorised);
}

void fast_pass_keeping(const Case& c, std::span<const Unit> units, int threads,
                       const FastSink& sink, ForwardMemo& keep) {
  run_pass(c, units, threads, sink, FirstPassKind::vectorised, &keep);
}

std::int64_t fast_pass_given(const Case& c, std::span<const Unit> units, int threads,
                             const FastSink& sink, const ForwardMemo& given) {
  std::atomic<std::int64_t> taken{0};
  run_pass(c, units, threads, sink, FirstPassKind::vectorised, nullptr, &given, &taken);
  return taken.load();
}

void fast_pass_reference(const Case& c, std::span<const Unit> units, int threads,
                         const FastSink& sink) {
  run_pass(c, units, threads, sink, FirstPassKind::reference);
}

}  // namespace moacert::oracle::detail
