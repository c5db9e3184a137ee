// The oracle's driver (docs/oracle.md): the first pass over doubles with
// directed rounding (over double-doubles for f64 targets), then the Ziv loop over MPFI precisions
// for the units that still hold an undecided element.
#include "oracle/oracle.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <mpfi.h>
#include <mpfr.h>

#include "oracle/detail/forward_memo.hpp"
#include "oracle/detail/mpfr_var.hpp"
#include "oracle/detail/passes.hpp"
#include "oracle/detail/units.hpp"
#include "oracle/ops/table.hpp"
#include "oracle/rounding.hpp"
#include "reference/named.hpp"

namespace moacert::oracle {

namespace {

constexpr int kFirstMpfiPrecision = 128;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool same_bits(double a, double b) {
  return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
}

// The exponent of ulp_F(x) (MPFR/Goldberg), for a finite double x.
int ulp_exponent(double x, Format f) {
  const FormatInfo fi = info(f);
  const int e = x == 0 ? fi.emin : std::max(std::ilogb(x), fi.emin);
  return e - fi.precision + 1;
}

// The smallest magnitude in [lo, hi]: 0 where the enclosure reaches zero.
double smallest_magnitude(double lo, double hi) {
  return (lo > 0) == (hi > 0) && lo != 0 && hi != 0 ? std::min(std::fabs(lo), std::fabs(hi)) : 0;
}

// A double-double's value hi + lo rounded down and up to a double: the
// sum rounded to nearest, then one step outward when TwoSum says that the
// rounding went the other way.
double double_below(const DD& x) {
  const double s = x.hi + x.lo;
  if (!std::isfinite(s)) return s;
  const double err = (x.hi - s) + x.lo;  // exact: |x.lo| <= ulp(x.hi) / 2 or x.lo = 0
  return err < 0 ? std::nextafter(s, -std::numeric_limits<double>::infinity()) : s;
}
double double_above(const DD& x) {
  const double s = x.hi + x.lo;
  if (!std::isfinite(s)) return s;
  const double err = (x.hi - s) + x.lo;
  return err > 0 ? std::nextafter(s, std::numeric_limits<double>::infinity()) : s;
}

// Refuses inputs that do not match the problem: count, shape, element type.
void check_inputs(const Case& c) {
  validate(c.problem);
  const OpInfo& op = info(c.problem.op);
  const auto shapes = input_shapes(c.problem);
  if (c.inputs.size() != shapes.size()) {
    throw std::invalid_argument(std::string(op.name) + ": " + std::to_string(c.inputs.size()) +
                                " inputs, expected " + std::to_string(shapes.size()));
  }
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const std::string what = std::string(op.name) + " input " + std::string(op.inputs[k]);
    if (c.inputs[k].shape() != shapes[k]) {
      throw std::invalid_argument(what + ": shape " + c.inputs[k].shape().str() + ", expected " +
                                  shapes[k].str());
    }
    const DType want = input_dtype(c.problem, k);  // its own format (per-tensor-formats)
    if (c.inputs[k].dtype() != want) {
      throw std::invalid_argument(what + ": element type " +
                                  std::string(name(c.inputs[k].dtype())) + ", expected " +
                                  std::string(name(want)));
    }
  }
  const auto inputs = inputs_by_name(c.problem.op, c.inputs);
  if (inputs.has("lens")) {  // attention.decode
    const AnyTensor& lens = inputs["lens"];
    for (const moa::Index& i : moa::iota(lens.shape())) {
      const double len = lens.get(i);
      if (!(len >= 1 && len <= double(c.problem.dims.M))) {
        throw std::invalid_argument("attention.decode: lens" + i.str() + " = " +
                                    std::to_string(static_cast<long long>(len)) +
                                    " is out of [1, L = " + std::to_string(c.problem.dims.M) + "]");
      }
    }
  }
}

using detail::Mpfr;

DD dd_of(mpfr_srcptr x) {
  DD d;
  d.hi = mpfr_get_d(x, MPFR_RNDN);
  if (!std::isfinite(d.hi) || mpfr_nan_p(x)) return d;
  Mpfr rest(mpfr_get_prec(x) + 64);
  mpfr_sub_d(rest.v, x, d.hi, MPFR_RNDN);
  d.lo = mpfr_get_d(rest.v, MPFR_RNDN);
  return d;
}

std::string decimal_of(mpfr_srcptr x, int digits) {
  if (mpfr_nan_p(x)) return "nan";
  if (mpfr_inf_p(x)) return mpfr_sgn(x) > 0 ? "inf" : "-inf";
  char* s = nullptr;
  if (mpfr_asprintf(&s, "%.*Re", digits - 1, x) < 0) throw std::bad_alloc();
  std::string out(s);
  mpfr_free_str(s);
  return out;
}

std::string decimal_of(double x, int digits) {
  Mpfr v(53);
  mpfr_set_d(v.v, x, MPFR_RNDN);
  return decimal_of(v.v, digits);
}

// (hi - lo) / min(|lo|, |hi|), +inf when the enclosure touches zero.
double relative_width(mpfr_srcptr lo, mpfr_srcptr hi) {
  if (mpfr_sgn(lo) != mpfr_sgn(hi) || mpfr_zero_p(lo) || mpfr_zero_p(hi))
    return std::numeric_limits<double>::infinity();
  Mpfr w(64), m(64);
  mpfr_sub(w.v, hi, lo, MPFR_RNDU);
  if (mpfr_cmpabs(lo, hi) < 0) {
    mpfr_abs(m.v, lo, MPFR_RNDD);
  } else {
    mpfr_abs(m.v, hi, MPFR_RNDD);
  }
  mpfr_div(w.v, w.v, m.v, MPFR_RNDU);
  return mpfr_get_d(w.v, MPFR_RNDU);
}

// Per-case state shared by the passes' sinks.
class Driver {
 public:
  Driver(const Case& c, const Options& o) : case_(c), opt_(o) {
    need_bits_ = bits_for_digits(o.exact_digits);
    const Problem& p = c.problem;
    const OpInfo& op = info(p.op);
    const auto shapes = output_shapes(p);
    // Which rows are evaluated: all, or the selection's.
    std::vector<std::uint8_t> query(static_cast<std::size_t>(query_row_count(p)), !o.rows);
    std::vector<std::uint8_t> key(static_cast<std::size_t>(key_row_count(p)), !o.rows);
    if (o.rows) {
      for (moa::extent_t r : o.rows->query_rows) query.at(static_cast<std::size_t>(r)) = 1;
      for (moa::extent_t r : o.rows->key_rows) key.at(static_cast<std::size_t>(r)) = 1;
    }
    for (std::size_t k = 0; k < shapes.size(); ++k) {
      // Each output correctly rounded to its own format
      // (docs/design.md#per-tensor-formats).
      fmt_.push_back(output_format(p, k));
      TensorAnswer t;
      t.name = std::string(op.outputs[k]);
      t.shape = shapes[k];
      const auto n = static_cast<std::size_t>(moa::tau(shapes[k]));
      t.rounded.assign(n, kNaN);
      t.exact.assign(n, DD{kNaN, 0});
      const auto& rows = is_key_output(p.op, int(k)) ? key : query;
      const auto per_row = static_cast<std::size_t>(row_length(p, int(k)));
      t.evaluated.resize(n);
      for (std::size_t i = 0; i < n; ++i) t.evaluated[i] = rows[i / per_row];
      t.undetermined = t.evaluated;  // undecided until a pass decides it
      if (o.exact_digits > 0) t.exact_decimal.assign(n, "");
      for (std::uint8_t e : t.evaluated) answer_.elements += e;
      answer_.outputs.push_back(std::move(t));
      lo_.emplace_back(n, kNaN);
      hi_.emplace_back(n, kNaN);
      unit_of_.emplace_back(n, 0);
      refine_.emplace_back(n, 0);
      width_.emplace_back(n, 0.0);
    }
  }

  Answer run() {
    const std::vector<detail::Unit> units =
        detail::units_of(case_.problem, opt_.rows ? &*opt_.rows : nullptr);
    pending_.assign(units.size(), 0);

    // First pass: store the enclosures (the sink runs under round-upward),
    // then decide under round-to-nearest. An op whose row of the table says
    // so has none (block: passes.hpp).
    // Double ends cannot decide a rounding to double: f64 targets take the
    // double-double pass, whose ends are stored beside (dd_lo_, dd_hi_).
    const bool dd = std::find(fmt_.begin(), fmt_.end(), Format::f64) != fmt_.end();
    const bool first_pass = oracle_op(case_.problem.op).first_pass;
    if (!first_pass) {
      pending_.assign(units.size(), 1);
    } else {
      // A unit may compute elements of rows not selected (the sampled
      // oracle; block's batch): not evaluated, not kept.
      if (dd) {
        for (const auto& l : lo_) {
          dd_lo_.emplace_back(l.size());
          dd_hi_.emplace_back(l.size());
        }
        detail::dd_pass(
            case_, units, opt_.threads,
            [this](std::size_t u, int out, moa::extent_t flat, const DD& lo, const DD& hi) {
              const auto i = static_cast<std::size_t>(flat);
              if (!answer_.outputs[out].evaluated[i]) return;
              dd_lo_[out][i] = lo;
              dd_hi_[out][i] = hi;
              unit_of_[out][i] = u;
            });
      } else {
        const detail::FastSink sink = [this](std::size_t u, int out, moa::extent_t flat, double lo,
                                             double hi) {
          const auto i = static_cast<std::size_t>(flat);
          if (!answer_.outputs[out].evaluated[i]) return;
          lo_[out][i] = lo;
          hi_[out][i] = hi;
          unit_of_[out][i] = u;
        };
        // A generated backward's forward (Options::keep_forward_rows) and
        // that backward's key rows share the same first-pass rows.
        const bool key_rows = std::any_of(units.begin(), units.end(), [](const detail::Unit& u) {
          return u.kind == detail::UnitKind::bwd_key_rows;
        });
        if (opt_.keep_forward_rows && case_.problem.op == Op::attention_fwd && !opt_.rows) {
          std::shared_ptr<detail::ForwardMemo> keep = detail::start_forward_memo(case_);
          detail::fast_pass_keeping(case_, units, opt_.threads, sink, *keep);
          detail::keep_forward_memo(std::move(keep));
        } else if (const auto given = key_rows ? detail::forward_memo_for(case_) : nullptr) {
          answer_.forward_rows_given =
              detail::fast_pass_given(case_, units, opt_.threads, sink, *given);
        } else {
          detail::fast_pass(case_, units, opt_.threads, sink);
        }
      }
      answer_.max_precision_used = dd ? 106 : 53;
      for (std::size_t out = 0; out < lo_.size(); ++out) {
        for (std::size_t i = 0; i < lo_[out].size(); ++i) {
          if (!answer_.outputs[out].evaluated[i]) continue;
          if (dd ? decide_dd(out, i) : decide_fast(out, i)) ++answer_.decided_first;
          // Undecided, or decided with a DD too coarse: on to MPFI.
          if (answer_.outputs[out].undetermined[i] || refine_[out][i])
            pending_[unit_of_[out][i]] = 1;
        }
      }
    }

    // Before MPFI, f32, bf16 and f16 targets re-run their pending units in
    // double-doubles: where a long sum cancels, the first pass's double
    // ends are too far apart for the DD's 2^-exact_ulp_bits ulp, while
    // double-double ends are some 2^40 times closer, and cost a small
    // share of MPFI's time (docs/oracle.md, "Narrowing").
    if (!dd && first_pass && need_bits_ == 0) narrow_in_dd(units);

    // The Ziv loop: each level re-runs, at a higher precision, the units
    // that still hold an undecided element.
    const int cap = std::max(opt_.max_precision, 53);
    int bits = std::min(kFirstMpfiPrecision, cap);
    for (;;) {
      std::vector<detail::Unit> todo;
      for (std::size_t u = 0; u < units.size(); ++u)
        if (pending_[u]) todo.push_back(units[u]);
      if (todo.empty()) break;
      std::vector<std::uint8_t> still(todo.size(), 0);
      const bool last = bits >= cap;
      const int used =
          detail::mpfi_pass(case_, todo, bits, opt_.threads,
                            [&](std::size_t u, int out, moa::extent_t flat, mpfi_srcptr x) {
                              const auto i = static_cast<std::size_t>(flat);
                              if (!answer_.outputs[out].evaluated[i]) return;
                              if (answer_.outputs[out].undetermined[i]) {
                                if (!decide_mpfi(out, i, x, last)) still[u] = 1;
                              } else if (refine_[out][i]) {
                                if (!refine_mpfi(out, i, x, last)) still[u] = 1;
                              }
                            });
      answer_.max_precision_used = std::max(answer_.max_precision_used, used);
      if (last) break;
      std::size_t t = 0;
      for (std::size_t u = 0; u < units.size(); ++u)
        if (pending_[u]) pending_[u] = still[t++];
      bits = std::min(bits * 2, cap);
    }

    for (const TensorAnswer& t : answer_.outputs)
      for (std::uint8_t flag : t.undetermined) answer_.undetermined += flag;
    for (const auto& w : width_)
      for (double x : w) answer_.max_relative_width = std::max(answer_.max_relative_width, x);
    return std::move(answer_);
  }

 private:
  void set(std::size_t out, std::size_t i, double rounded, DD exact) {
    TensorAnswer& t = answer_.outputs[out];
    t.rounded[i] = rounded;
    t.exact[i] = exact;
    t.undetermined[i] = 0;
  }

  // A decision from the first pass's enclosure [lo, hi].
  bool decide_fast(std::size_t out, std::size_t i) {
    const double lo = lo_[out][i], hi = hi_[out][i];
    if (std::isnan(lo) || std::isnan(hi)) return false;  // maybe overflow: let MPFI tell
    if (lo == hi) {                                      // exact, infinities included
      const double x = lo == 0 ? 0.0 : lo;               // an exact zero is +0
      set(out, i, round_to_format(x, fmt_[out]), DD{x, 0});
      if (opt_.exact_digits > 0)
        answer_.outputs[out].exact_decimal[i] = decimal_of(x, opt_.exact_digits);
      return true;
    }
    if (!std::isfinite(lo) || !std::isfinite(hi) || need_bits_ > 0) return false;
    const double rlo = round_to_format(lo, fmt_[out]), rhi = round_to_format(hi, fmt_[out]);
    const bool decided = same_bits(rlo, rhi);
    const double m = smallest_magnitude(lo, hi);
    if (!decided && !settled_by_allowance(out, i, hi - lo, m)) return false;
    set(out, i, decided ? rlo : kNaN, DD{lo + (hi - lo) / 2, 0});
    if (m > 0) width_[out][i] = (hi - lo) / m;
    if (decided && hi - lo > widest_accepted(out, i, m)) refine_[out][i] = 1;
    return true;
  }

  // Element i of output `out`'s allowance (Options::allowed); 0 for none.
  double allowance(std::size_t out, std::size_t i) const {
    if (!opt_.allowed) return 0;
    const double a = (*opt_.allowed)[out][i];
    return std::isfinite(a) && a > 0 ? a : 0;
  }

  // The widest enclosure whose midpoint is an `exact` the options accept,
  // for an enclosure whose smallest magnitude is `small`: 2^(1 -
  // exact_ulp_bits) times the larger of ulp_F(small) and the element's
  // allowance (Options::exact_ulp_bits, Options::allowed); +inf without
  // exact_ulp_bits.
  double widest_accepted(std::size_t out, std::size_t i, double small) const {
    if (opt_.exact_ulp_bits <= 0) return kInf;
    const double ulp = std::ldexp(1.0, ulp_exponent(small, fmt_[out]));
    return std::ldexp(std::max(ulp, allowance(out, i)), 1 - opt_.exact_ulp_bits);
  }

  // Whether an element whose rounding is not decided is settled all the
  // same: its allowance is what asks for its `exact`, and its enclosure
  // (`width` wide, smallest magnitude `small`) is narrow enough for it.
  bool settled_by_allowance(std::size_t out, std::size_t i, double width, double small) const {
    return allowance(out, i) > 0 && width <= widest_accepted(out, i, small);
  }

  // The double-double step for targets narrower than f64: the pending
  // units' elements that are undecided, or decided with too coarse a DD,
  // take the double-double enclosure rounded outward to double ends, and
  // are decided from them as the first pass decides; a unit stays pending
  // (on to MPFI) while one of them is still undecided or too coarse.
  void narrow_in_dd(const std::vector<detail::Unit>& units) {
    std::vector<detail::Unit> todo;
    std::vector<std::size_t> index;  // todo's positions in `units`
    for (std::size_t u = 0; u < units.size(); ++u) {
      if (!pending_[u]) continue;
      todo.push_back(units[u]);
      index.push_back(u);
    }
    if (todo.empty()) return;
    // The sink stores only (it runs in the pass's threads), one element
    // each; the first pass's ends of those elements are no longer needed.
    std::vector<std::vector<std::uint8_t>> got;
    for (const auto& l : lo_) got.emplace_back(l.size(), 0);
    detail::dd_pass(case_, todo, opt_.threads,
                    [&](std::size_t, int out, moa::extent_t flat, const DD& l, const DD& h) {
                      const auto i = static_cast<std::size_t>(flat);
                      const TensorAnswer& t = answer_.outputs[out];
                      if (!t.evaluated[i] || !(t.undetermined[i] || refine_[out][i])) return;
                      lo_[out][i] = double_below(l);
                      hi_[out][i] = double_above(h);
                      got[out][i] = 1;
                    });
    answer_.max_precision_used = std::max(answer_.max_precision_used, 106);
    std::vector<std::uint8_t> still(units.size(), 0);
    for (std::size_t out = 0; out < lo_.size(); ++out) {
      for (std::size_t i = 0; i < lo_[out].size(); ++i) {
        if (!got[out][i]) continue;
        const TensorAnswer& t = answer_.outputs[out];
        if (t.undetermined[i]) {
          decide_fast(out, i);
        } else {
          refine_in_dd(out, i);
        }
        if (t.undetermined[i] || refine_[out][i]) still[unit_of_[out][i]] = 1;
      }
    }
    for (std::size_t u : index) pending_[u] = still[u];
  }

  // A decided element whose first-pass DD was too coarse takes the
  // midpoint of the double-double step's enclosure once that is accurate
  // enough (and agrees with the decision); otherwise it stays for MPFI.
  void refine_in_dd(std::size_t out, std::size_t i) {
    const double lo = lo_[out][i], hi = hi_[out][i];
    if (!std::isfinite(lo) || !std::isfinite(hi)) return;
    const double rlo = round_to_format(lo, fmt_[out]), rhi = round_to_format(hi, fmt_[out]);
    if (!same_bits(rlo, rhi) || !same_bits(rlo, answer_.outputs[out].rounded[i])) return;
    const double m = smallest_magnitude(lo, hi);
    if (hi - lo > widest_accepted(out, i, m)) return;
    answer_.outputs[out].exact[i] = DD{lo + (hi - lo) / 2, 0};
    width_[out][i] = m > 0 ? (hi - lo) / m : 0;
    refine_[out][i] = 0;
  }

  // A decision from the double-double pass's enclosure [lo, hi] (f64): an
  // end's value hi + lo rounds to double as the double sum hi + lo does
  // (IEEE addition is correctly rounded); a point with no tail is exact.
  bool decide_dd(std::size_t out, std::size_t i) {
    const DD lo = dd_lo_[out][i], hi = dd_hi_[out][i];
    if (std::isnan(lo.hi) || std::isnan(hi.hi)) return false;
    if (lo.hi == hi.hi && lo.lo == 0 && hi.lo == 0) {  // exact, infinities included
      const double x = lo.hi == 0 ? 0.0 : lo.hi;       // an exact zero is +0
      set(out, i, round_to_format(x, fmt_[out]), DD{x, 0});
      if (opt_.exact_digits > 0)
        answer_.outputs[out].exact_decimal[i] = decimal_of(x, opt_.exact_digits);
      return true;
    }
    if (!std::isfinite(lo.hi) || !std::isfinite(hi.hi) || need_bits_ > 0) return false;
    const double rlo = round_to_format(lo.hi + lo.lo, fmt_[out]),
                 rhi = round_to_format(hi.hi + hi.lo, fmt_[out]);
    const bool decided = same_bits(rlo, rhi);
    if (!decided && allowance(out, i) == 0) return false;
    // The midpoint as a DD, and the width, through MPFR (exact enough at 256 bits).
    Mpfr mid(256), width(256);
    mpfr_set_d(mid.v, lo.hi, MPFR_RNDN);
    mpfr_add_d(mid.v, mid.v, lo.lo, MPFR_RNDN);
    mpfr_set_d(width.v, hi.hi, MPFR_RNDN);
    mpfr_add_d(width.v, width.v, hi.lo, MPFR_RNDN);
    mpfr_sub(width.v, width.v, mid.v, MPFR_RNDU);  // hi - lo
    const double w = mpfr_get_d(width.v, MPFR_RNDU);
    mpfr_div_2ui(width.v, width.v, 1, MPFR_RNDN);
    mpfr_add(mid.v, mid.v, width.v, MPFR_RNDN);  // lo + (hi - lo) / 2
    if (decided) {
      set(out, i, rlo, dd_of(mid.v));
      const double m = smallest_magnitude(rlo, rhi);
      if (m > 0) width_[out][i] = w / m;
      if (w > widest_accepted(out, i, m)) refine_[out][i] = 1;
      return true;
    }
    // Undecided: settled only by its allowance, judged from the ends
    // rounded outward (the nearest doubles could lie inside).
    const double m = smallest_magnitude(double_below(lo), double_above(hi));
    if (!settled_by_allowance(out, i, w, m)) return false;
    set(out, i, kNaN, dd_of(mid.v));
    if (m > 0) width_[out][i] = w / m;
    return true;
  }

  // A decision from an MPFI enclosure; at the cap (`last`) an undecided
  // element gets its midpoint and stays flagged undetermined.
  bool decide_mpfi(std::size_t out, std::size_t i, mpfi_srcptr x, bool last) {
    mpfr_srcptr lo = &x->left, hi = &x->right;
    TensorAnswer& t = answer_.outputs[out];
    if (mpfr_nan_p(lo) || mpfr_nan_p(hi)) {  // undefined (docs/oracle.md#non-finite)
      set(out, i, kNaN, DD{kNaN, 0});
      if (opt_.exact_digits > 0) t.exact_decimal[i] = "nan";
      return true;
    }
    if (mpfr_equal_p(lo, hi)) {  // a point: the exact value
      const bool zero = mpfr_zero_p(lo) != 0;
      set(out, i, zero ? 0.0 : round_to_format(lo, fmt_[out]), zero ? DD{0, 0} : dd_of(lo));
      if (opt_.exact_digits > 0) t.exact_decimal[i] = decimal_of(lo, opt_.exact_digits);
      return true;
    }
    const double rlo = round_to_format(lo, fmt_[out]), rhi = round_to_format(hi, fmt_[out]);
    const double width = relative_width(lo, hi);
    const bool narrow = need_bits_ == 0 || width <= std::ldexp(1.0, -need_bits_);
    const bool decided = same_bits(rlo, rhi) && !std::isnan(rlo);
    const bool accurate = narrow && dd_accurate(out, i, lo, hi);
    const bool settled = !decided && accurate && allowance(out, i) > 0;
    if ((decided && accurate) || settled || last) {
      Mpfr mid(static_cast<mpfr_prec_t>(mpfi_get_prec(x)) + 1);
      mpfi_mid(mid.v, x);
      set(out, i, decided ? rlo : settled ? kNaN : round_to_format(mid.v, fmt_[out]), dd_of(mid.v));
      if (opt_.exact_digits > 0) t.exact_decimal[i] = decimal_of(mid.v, opt_.exact_digits);
      width_[out][i] = std::isfinite(width) ? width : 0;
      if (!decided && !settled) t.undetermined[i] = 1;
      return decided || settled;
    }
    return false;
  }

  // Whether the midpoint of [lo, hi] is an `exact` the options accept
  // (widest_accepted): within 2^-exact_ulp_bits of the larger of an ulp and
  // the element's allowance, from every point of it.
  bool dd_accurate(std::size_t out, std::size_t i, mpfr_srcptr lo, mpfr_srcptr hi) const {
    if (opt_.exact_ulp_bits <= 0) return true;
    Mpfr w(64);
    mpfr_sub(w.v, hi, lo, MPFR_RNDU);
    // The smallest magnitude rounded toward zero: an ulp no larger than its own.
    const double small = smallest_magnitude(mpfr_get_d(lo, MPFR_RNDZ), mpfr_get_d(hi, MPFR_RNDZ));
    return mpfr_cmp_d(w.v, widest_accepted(out, i, small)) <= 0;
  }

  // A decided element whose first-pass DD was too coarse takes the MPFI
  // enclosure's midpoint once that is accurate enough (or at the cap).
  bool refine_mpfi(std::size_t out, std::size_t i, mpfi_srcptr x, bool last) {
    mpfr_srcptr lo = &x->left, hi = &x->right;
    if (mpfr_nan_p(lo) || mpfr_nan_p(hi)) return true;  // keep the first pass's
    const bool accurate = mpfr_equal_p(lo, hi) || dd_accurate(out, i, lo, hi);
    if (!accurate && !last) return false;
    if (accurate) {
      Mpfr mid(static_cast<mpfr_prec_t>(mpfi_get_prec(x)) + 1);
      mpfi_mid(mid.v, x);
      answer_.outputs[out].exact[i] = dd_of(mid.v);
      const double width = relative_width(lo, hi);
      width_[out][i] = std::isfinite(width) ? width : 0;
    }
    refine_[out][i] = 0;
    return true;
  }

  const Case& case_;
  Options opt_;
  std::vector<Format> fmt_;  // each output's
  int need_bits_ = 0;
  Answer answer_;
  std::vector<std::vector<double>> lo_, hi_;
  std::vector<std::vector<DD>> dd_lo_, dd_hi_;  // the f64 first pass's ends
  std::vector<std::vector<std::size_t>> unit_of_;
  std::vector<std::vector<std::uint8_t>> refine_;  // decided, but the DD needs MPFI
  std::vector<std::vector<double>> width_;         // relative width behind each DD
  std::vector<std::uint8_t> pending_;
};

}  // namespace

int bits_for_digits(int digits) {
  return digits > 0 ? static_cast<int>(std::ceil(digits * 3.3219280948873623)) + 4 : 0;
}

Answer evaluate(const Case& c, const Options& options) {
  check_inputs(c);
  if (options.allowed) {  // one allowance per element of every output
    const auto shapes = output_shapes(c.problem);
    bool fits = options.allowed->size() == shapes.size();
    for (std::size_t k = 0; fits && k < shapes.size(); ++k)
      fits = double((*options.allowed)[k].size()) == double(moa::tau(shapes[k]));
    if (!fits)
      throw std::invalid_argument(std::string(info(c.problem.op).name) +
                                  ": Options::allowed does not have one allowance per element of "
                                  "every output");
  }
  if (!options.rows) return Driver(c, options).run();
  Options sampled = options;
  sampled.rows = normalised(*options.rows, c.problem);
  return Driver(c, sampled).run();
}

}  // namespace moacert::oracle
