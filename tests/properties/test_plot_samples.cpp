// The plots' bounded samples (properties/plot_samples.hpp): a sample of a
// stream is the same whatever grouping and order its parts were merged in,
// it keeps the worst items and no more than its caps, and a certification
// keeps them for every output tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "kernels/registry.hpp"
#include "properties/certify.hpp"
#include "properties/plot_samples.hpp"

namespace moacert::properties {
namespace {

struct Item {
  int id = 0;
  friend bool operator==(const Item&, const Item&) = default;
};

std::vector<int> ids(const std::vector<Item>& items) {
  std::vector<int> out;
  for (const Item& i : items) out.push_back(i.id);
  return out;
}

// @law items(merge of parts) == items(whole), for random splits and orders.
TEST(BoundedSample, MergingPartsInAnyOrderKeepsWhatTheWholeKeeps) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int n = int(rng() % 2000) + 1;
    std::vector<std::pair<double, std::uint64_t>> stream;
    for (int i = 0; i < n; ++i)
      stream.push_back({double(rng() % 100) / 7, rng()});  // ties in badness
    BoundedSample<Item> whole(5, 40);
    for (int i = 0; i < n; ++i) whole.add({i}, stream[i].first, stream[i].second);
    // Parts of random sizes, merged in a shuffled order.
    std::vector<BoundedSample<Item>> parts;
    for (int i = 0; i < n;) {
      const int len = int(rng() % 300) + 1;
      BoundedSample<Item> part(5, 40);
      for (int k = i; k < std::min(n, i + len); ++k)
        part.add({k}, stream[k].first, stream[k].second);
      parts.push_back(part);
      i += len;
    }
    std::shuffle(parts.begin(), parts.end(), rng);
    BoundedSample<Item> merged(5, 40);
    for (const auto& p : parts) merged.merge(p);
    ASSERT_EQ(ids(merged.items()), ids(whole.items())) << "trial " << trial;
    ASSERT_EQ(merged.seen(), n);
    ASSERT_LE(whole.items().size(), 45u);
    // The worst item (largest badness, smallest key among ties) comes first.
    int worst = 0;
    for (int i = 1; i < n; ++i)
      if (stream[i].first > stream[worst].first ||
          (stream[i].first == stream[worst].first && stream[i].second < stream[worst].second))
        worst = i;
    ASSERT_EQ(whole.items().front().id, worst);
  }
}

TEST(BoundedSample, ANaNIsTheWorst) {
  BoundedSample<Item> s(1, 0);
  s.add({1}, 1e30, 1);
  s.add({2}, NAN, 2);
  s.add({3}, 5, 3);
  ASSERT_EQ(ids(s.items()), std::vector<int>{2});
}

// certify keeps, within the caps, each case's extents and each output's
// elements; every element's bound under the apriori rule, and a worst case
// that is the certificate's worst.
TEST(PlotSamples, ACertificationKeepsBoundedSamplesOfEveryOutput) {
  const auto* v = kernels::Registry::builtin().find(Op::rmsnorm, "cpu.dnf");
  ASSERT_NE(v, nullptr);
  CertifyOptions o;
  o.variant = v;
  o.cases = 4;
  o.seed = 3;
  o.equivalence = false;
  const Certificate cert = certify(o);
  const PlotData& d = cert.plots;
  ASSERT_EQ(d.dims, (std::vector<std::string>{"D", "T"}));  // dims_of's order
  ASSERT_EQ(d.tensors, (std::vector<std::string>{"y"}));
  ASSERT_EQ(d.cases_seen, cert.curated_run + cert.random_run);
  ASSERT_EQ(int(d.cases.size()), std::min<int>(d.cases_seen, int(kPlotCases)));
  ASSERT_EQ(d.elements_seen[0], cert.tensors[0].elements);
  ASSERT_LE(d.elements[0].size(), kWorstElements + kReservoirElements);
  double worst_ulp = 0;
  for (const auto& c : d.cases) worst_ulp = std::max(worst_ulp, c.max_ulp[0]);
  ASSERT_EQ(worst_ulp, cert.tensors[0].max_ulp);
  ASSERT_EQ(d.elements[0].front().ulps > 0 || cert.tensors[0].max_ratio == 0, true);
  for (const auto& e : d.elements[0]) {
    ASSERT_FALSE(std::isnan(e.bound));      // apriori: every element has its bound
    ASSERT_TRUE(std::isnan(e.torch_ulps));  // PyTorch did not run
    ASSERT_LE(e.abs_error, e.bound);        // the certificate holds
  }
  ASSERT_TRUE(d.launches.empty());  // cpu.dnf counts nothing
}

}  // namespace
}  // namespace moacert::properties
