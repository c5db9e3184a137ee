#include "properties/case_record.hpp"

#include "properties/wire.hpp"

namespace moacert::properties {

namespace {

// Each record's fields, listed once for both directions: `io` writes them
// (Put, over const values) or reads them back (Get).
template <class Io, class S>
void fields(Io& io, S& s) requires std::is_same_v<std::remove_const_t<S>, TensorStats> {
  io(s.name), io(s.elements), io(s.elements_total), io(s.max_ulp), io(s.mean_ulp);
  io(s.ulp_histogram), io(s.ratio_histogram), io(s.max_ratio), io(s.normwise_u), io(s.worst);
  io(s.worst_exact), io(s.worst_computed), io(s.worst_ulp), io(s.worst_bound), io(s.undetermined);
  io(s.unbounded), io(s.declared_vacuous);
}
template <class Io, class S>
void fields(Io& io, S& s) requires std::is_same_v<std::remove_const_t<S>, Sample::Stratum> {
  io(s.name), io(s.query_rows), io(s.key_rows);
}
template <class Io, class E>
void fields(Io& io, E& e) requires std::is_same_v<std::remove_const_t<E>, Equivalence> {
  io(e.name), io(e.kernel_max_ulp), io(e.torch_max_ulp), io(e.max_diff_ulp);
}
template <class Io, class E>
void fields(Io& io, E& e) requires std::is_same_v<std::remove_const_t<E>, ElementReport> {
  io(e.tensor), io(e.index), io(e.exact), io(e.computed), io(e.ulps), io(e.allowed);
}
template <class Io, class E>
void fields(Io& io, E& e) requires std::is_same_v<std::remove_const_t<E>, ElementPoint> {
  io(e.ordinal), io(e.element), io(e.ulps), io(e.abs_error), io(e.bound), io(e.torch_ulps);
}
template <class Io, class L>
void fields(Io& io, L& l) requires std::is_same_v<std::remove_const_t<L>, LaunchPoint> {
  io(l.ordinal), io(l.launch), io(l.kernel), io(l.atomics), io(l.model_atomics), io(l.bytes);
  io(l.model_bytes);
}
template <class Io, class C>
void fields(Io& io, C& c) requires std::is_same_v<std::remove_const_t<C>, CaseErrors> {
  io(c.ordinal), io(c.extents), io(c.max_ulp), io(c.max_ratio);
}
template <class T>
inline constexpr bool is_bounded_sample = false;
template <class T>
inline constexpr bool is_bounded_sample<BoundedSample<T>> = true;
template <class Io, class S>
void fields(Io& io, S& s) requires is_bounded_sample<std::remove_const_t<S>> {
  std::remove_const_t<S>::serialize(io, s);
}
template <class Io, class P>
void fields(Io& io, P& p) requires std::is_same_v<std::remove_const_t<P>, CasePlot> {
  io(p.errors), io(p.elements), io(p.launches);
}
template <class Io, class R>
void fields(Io& io, R& r) requires std::is_same_v<std::remove_const_t<R>, CaseRecord> {
  io(r.position), io(r.kind), io(r.holds), io(r.determinism_failed), io(r.refused);
  io(r.over_budget);
  io(r.accumulated);
  io(r.tensors), io(r.sampled), io(r.strata), io(r.has_equivalence), io(r.equivalence);
  io(r.ratio), io(r.token), io(r.why), io(r.failure_case), io(r.failure_elements);
  io(r.drawn_case), io(r.drawn_ratio);
  io(r.counted), io(r.traffic_checked), io(r.counts), io(r.cost_atomics);
  io(r.atomics_mismatch), io(r.traffic_mismatch), io(r.plot), io(r.regimes);
  io(r.extents);
  io(r.generation_seconds), io(r.bounds_seconds), io(r.oracle_seconds), io(r.kernel_seconds);
  io(r.judge_seconds), io(r.torch_seconds), io(r.determinism_seconds), io(r.shrinking_seconds);
  io(r.has_arithmetic), io(r.arithmetic.standard_ratio), io(r.arithmetic.consistent);
  io(r.arithmetic.looseness);
}

template <class T>
concept Scalar = std::is_arithmetic_v<T> || std::is_enum_v<T>;

struct Put {
  WireWriter& w;
  template <Scalar T>
  void operator()(const T& x) {
    w.put(x);
  }
  void operator()(const std::string& s) { w.put(s); }
  void operator()(const moa::Index& i) {
    w.put(std::int32_t(i.rank()));
    for (const moa::extent_t x : i) w.put(x);
  }
  void operator()(const ErrorHistogram& h) {  // the underflow bin, the bins, the overflow bin
    for (int i = -1; i <= h.axis().size(); ++i) w.put(std::int64_t(h.at(i)));
  }
  template <class A, class B>
  void operator()(const std::pair<A, B>& p) {
    (*this)(p.first), (*this)(p.second);
  }
  template <class T>
  void operator()(const std::vector<T>& v) {
    w.put(std::uint64_t(v.size()));
    for (const T& x : v) (*this)(x);
  }
  template <class T>
  void operator()(const T& x) requires requires(Put& p) {
    fields(p, x);
  }
  { fields(*this, x); }
};

struct Get {
  WireReader& r;
  template <Scalar T>
  void operator()(T& x) {
    x = r.get<T>();
  }
  void operator()(std::string& s) { s = r.get_string(); }
  void operator()(moa::Index& i) {
    const auto rank = r.get<std::int32_t>();
    i = moa::Index();
    for (std::int32_t k = 0; k < rank; ++k) i.push_back(r.get<moa::extent_t>());
  }
  void operator()(ErrorHistogram& h) {
    h = make_error_histogram();
    for (int i = -1; i <= h.axis().size(); ++i) h.at(i) = r.get<std::int64_t>();
  }
  template <class A, class B>
  void operator()(std::pair<A, B>& p) {
    (*this)(p.first), (*this)(p.second);
  }
  template <class T>
  void operator()(std::vector<T>& v) {
    const auto n = r.get<std::uint64_t>();
    if (n > r.remaining()) throw std::runtime_error("wire: a list longer than its message");
    v.resize(n);
    for (T& x : v) (*this)(x);
  }
  template <class T>
  void operator()(T& x) requires requires(Get& g) {
    fields(g, x);
  }
  { fields(*this, x); }
};

}  // namespace

std::string encode_records(const std::vector<CaseRecord>& records) {
  WireWriter w;
  Put{w}(records);
  return w.take();
}

std::vector<CaseRecord> decode_records(std::string_view bytes) {
  WireReader r(bytes);
  std::vector<CaseRecord> records;
  Get{r}(records);
  r.expect_done();
  return records;
}

}  // namespace moacert::properties
