// What the certificate keeps for its plots (PlotData, results/results.hpp),
// chosen case by case and bounded whatever the run's size: per case its
// extents and worst errors; per output tensor the worst elements and a
// reservoir of the rest; per launch of a counting backend its counts
// against the model (docs/certificate.md#plot-data).
//
// Each sample is two sketches, each exactly mergeable: the `worst` items of
// largest badness, and the `reservoir` items of smallest key, the key a hash
// of the item's identity (case, tensor, element). So a case's record can be
// reduced with the others in any grouping and order — the run's case
// order, or ranks' partial results — and the kept items are the same.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/registry.hpp"
#include "oracle/oracle.hpp"
#include "reference/case.hpp"
#include "results/results.hpp"

namespace moacert::properties {

// Caps of docs/certificate.md#plot-data: per output tensor, the worst
// elements and a reservoir; cases; launches (the worst: the largest
// relative difference between counted and modelled).
constexpr std::size_t kWorstElements = 16, kReservoirElements = 240;
constexpr std::size_t kPlotCases = 256;
constexpr std::size_t kWorstLaunches = 16, kReservoirLaunches = 240;

// A bounded sample of a stream: the `worst_cap` items of largest badness
// (ties: smallest key) and the `reservoir_cap` items of smallest key.
// @post items() of a merge of samples of the parts of a stream equals
//       items() of the sample of the whole stream, for any split and order.
template <class T>
class BoundedSample {
 public:
  BoundedSample(std::size_t worst_cap, std::size_t reservoir_cap)
      : worst_cap_(worst_cap), reservoir_cap_(reservoir_cap) {}
  BoundedSample() : BoundedSample(0, 0) {}  // to be read (serialize)

  // `key` identifies the item (a hash of what it is): two adds of one key
  // are one item.
  void add(const T& item, double badness, std::uint64_t key) {
    ++seen_;
    if (std::isnan(badness)) badness = INFINITY;  // a NaN error is as bad as it gets
    const Kept k{item, badness, key};
    if (worst_cap_ > 0) worst_.push_back(k);
    if (reservoir_cap_ > 0) reservoir_.push_back(k);
    if (worst_.size() > 2 * worst_cap_ + 64) prune(worst_, worst_cap_, by_badness);
    if (reservoir_.size() > 2 * reservoir_cap_ + 64) prune(reservoir_, reservoir_cap_, by_key);
  }

  void merge(const BoundedSample& o) {
    seen_ += o.seen_;
    worst_.insert(worst_.end(), o.worst_.begin(), o.worst_.end());
    reservoir_.insert(reservoir_.end(), o.reservoir_.begin(), o.reservoir_.end());
    prune(worst_, worst_cap_, by_badness);
    prune(reservoir_, reservoir_cap_, by_key);
  }

  // The whole state, caps included, for a case's record that travels to
  // another process (properties/case_record.cpp): `io` writes it (Self
  // const) or reads it back.
  template <class Io, class Self>
  static void serialize(Io& io, Self& s) {
    io(s.worst_cap_), io(s.reservoir_cap_), io(s.seen_);
    for (auto* part : {&s.worst_, &s.reservoir_}) {
      std::uint64_t n = part->size();
      io(n);
      if constexpr (!std::is_const_v<Self>) part->resize(n);
      for (auto& k : *part) io(k.item), io(k.badness), io(k.key);
    }
  }

  // Items added (merged ones included).
  std::int64_t seen() const { return seen_; }

  // The worst, worst first, then the reservoir by key; each item once.
  std::vector<T> items() const {
    std::vector<Kept> worst = worst_, reservoir = reservoir_;
    prune(worst, worst_cap_, by_badness);
    prune(reservoir, reservoir_cap_, by_key);
    std::vector<T> out;
    std::vector<std::uint64_t> keys;
    for (const auto* part : {&worst, &reservoir})
      for (const Kept& k : *part) {
        if (std::find(keys.begin(), keys.end(), k.key) != keys.end()) continue;
        keys.push_back(k.key);
        out.push_back(k.item);
      }
    return out;
  }

 private:
  struct Kept {
    T item;
    double badness;
    std::uint64_t key;
  };
  static bool by_badness(const Kept& a, const Kept& b) {
    return a.badness != b.badness ? a.badness > b.badness : a.key < b.key;
  }
  static bool by_key(const Kept& a, const Kept& b) { return a.key < b.key; }
  // Keeps the first `cap` in `order`, sorted; one of each key (an item
  // added twice has one badness, so its copies sort side by side).
  static void prune(std::vector<Kept>& v, std::size_t cap,
                    bool (*order)(const Kept&, const Kept&)) {
    std::sort(v.begin(), v.end(), order);
    v.erase(std::unique(v.begin(), v.end(),
                        [](const Kept& a, const Kept& b) { return a.key == b.key; }),
            v.end());
    if (v.size() > cap) v.resize(cap);
  }

  std::size_t worst_cap_, reservoir_cap_;
  std::int64_t seen_ = 0;
  std::vector<Kept> worst_, reservoir_;
};

// One judged case's share of the plot data: the record a case loop keeps
// per case and reduces in case order (PlotSampler::add).
struct CasePlot {
  CaseErrors errors;
  std::vector<BoundedSample<ElementPoint>> elements;  // per output tensor
  BoundedSample<LaunchPoint> launches{kWorstLaunches, kReservoirLaunches};
};

// The record of case `ordinal` (its place in the run, from 0): judged
// under `rule` with `allowed` per element (allowances()), `bounds` the
// a priori bounds (null under max-ulp), `torch` PyTorch's outputs (empty
// when it did not run), `launches` the backend's counts of the case's own
// run (Variant::take_launch_counts; empty when it counts none).
CasePlot plot_case(int ordinal, const Case& c, const oracle::Answer& exact,
                   const std::vector<AnyTensor>& outputs, const Rule& rule,
                   const std::vector<std::vector<double>>& allowed,
                   const std::vector<std::vector<double>>* bounds,
                   const std::vector<AnyTensor>& torch,
                   const std::vector<kernels::LaunchCounts>& launches);

// The reduction of the cases' records into the certificate's PlotData.
class PlotSampler {
 public:
  explicit PlotSampler(Op op);
  void add(const CasePlot& p);
  PlotData finish() const;

 private:
  PlotData head_;  // dims and tensor names
  BoundedSample<CaseErrors> cases_{0, kPlotCases};
  std::vector<BoundedSample<ElementPoint>> elements_;
  BoundedSample<LaunchPoint> launches_{kWorstLaunches, kReservoirLaunches};
};

}  // namespace moacert::properties
