// The counters' sums and JSON, and the report: each finished launch's
// counters (moacert::simt::last_launch_counters) and, summed since the last
// moacert_simt_take_report, the JSON object a plugin's worker sends back.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "simt/state.hpp"

namespace moacert::simt {

BufferCounters& BufferCounters::operator+=(const BufferCounters& o) {
  loads += o.loads;
  load_bytes += o.load_bytes;
  stores += o.stores;
  store_bytes += o.store_bytes;
  atomics += o.atomics;
  return *this;
}

Counters& Counters::operator+=(const Counters& o) {
  blocks += o.blocks;
  threads += o.threads;
  barriers += o.barriers;
  warp_ops += o.warp_ops;
  global_loads += o.global_loads;
  global_load_bytes += o.global_load_bytes;
  global_stores += o.global_stores;
  global_store_bytes += o.global_store_bytes;
  shared_loads += o.shared_loads;
  shared_load_bytes += o.shared_load_bytes;
  shared_stores += o.shared_stores;
  shared_store_bytes += o.shared_store_bytes;
  for (int s = 0; s < n_spaces; ++s)
    for (int k = 0; k < n_atomic_kinds; ++k) atomics[s][k] += o.atomics[s][k];
  for (const BufferCounters& b : o.buffers) {
    auto same = std::find_if(buffers.begin(), buffers.end(),
                             [&](const BufferCounters& kept) { return kept.name == b.name; });
    if (same == buffers.end())
      buffers.push_back(b);
    else
      *same += b;
  }
  return *this;
}

std::string Counters::json() const {
  static const char* const kinds[] = {"add", "max", "min", "exch", "cas"};
  std::string out;
  auto field = [&](const char* name, std::uint64_t v) {
    if (!out.empty()) out += ',';
    out += '"';
    out += name;
    out += "\":";
    out += std::to_string(v);
  };
  field("blocks", blocks);
  field("threads", threads);
  field("barriers", barriers);
  field("warp_ops", warp_ops);
  field("global_loads", global_loads);
  field("global_load_bytes", global_load_bytes);
  field("global_stores", global_stores);
  field("global_store_bytes", global_store_bytes);
  field("shared_loads", shared_loads);
  field("shared_load_bytes", shared_load_bytes);
  field("shared_stores", shared_stores);
  field("shared_store_bytes", shared_store_bytes);
  for (int s = 0; s < n_spaces; ++s)
    for (int k = 0; k < n_atomic_kinds; ++k) {
      const std::string name =
          std::string("atomic_") + kinds[k] + (s == global ? "_global" : "_shared");
      field(name.c_str(), atomics[s][k]);
    }
  return "{" + out + "}";
}

namespace detail {

namespace {

// The launch's per-buffer counters into its Counters, in registration order.
void gather_buffer_counts(Launch& L) {
  std::vector<const Buffer*> touched;
  for (std::size_t i : L.touched) touched.push_back(&runtime.buffers[i]);
  std::sort(touched.begin(), touched.end(),
            [](const Buffer* x, const Buffer* y) { return x->serial < y->serial; });
  for (const Buffer* b : touched) L.counters.buffers.push_back(b->counts);
  const BufferCounters& m = L.module_data;
  if (m.loads || m.stores || m.atomics) L.counters.buffers.push_back(m);
}

}  // namespace

void record_report(Launch& L) {
  gather_buffer_counts(L);
  runtime.last_counters = L.counters;
  // The report carries the totals only (Counters::json), so its sum keeps
  // no per-buffer list, which would grow with every unnamed cudaMalloc.
  std::vector<BufferCounters> buffers = std::move(L.counters.buffers);
  runtime.report_counters += L.counters;
  L.counters.buffers = std::move(buffers);
  ++runtime.report_launches;
  if (L.failed && runtime.report_hazard.empty()) {
    runtime.report_hazard_kind = L.hazard_kind;
    runtime.report_hazard = L.hazard_message;
  }
}

}  // namespace detail

Counters last_launch_counters() {
  std::lock_guard lock(detail::runtime.mutex);
  return detail::runtime.last_counters;
}

}  // namespace moacert::simt

using namespace moacert::simt;

namespace {
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", unsigned(static_cast<unsigned char>(c)));
      out += b;
    } else {
      out += c;
    }
  }
  return out + "\"";
}
}  // namespace

extern "C" std::size_t moacert_simt_take_report(char* buf, std::size_t len) {
  std::lock_guard lock(detail::runtime.mutex);
  std::string out = "{\"launches\":" + std::to_string(detail::runtime.report_launches) +
                    ",\"counters\":" + detail::runtime.report_counters.json() + ",\"hazard\":";
  out += detail::runtime.report_hazard.empty()
             ? std::string("null")
             : "{\"kind\":" + json_string(detail::runtime.report_hazard_kind) +
                   ",\"message\":" + json_string(detail::runtime.report_hazard) + "}";
  out += "}";
  detail::runtime.report_counters = Counters{};
  detail::runtime.report_launches = 0;
  detail::runtime.report_hazard.clear();
  detail::runtime.report_hazard_kind.clear();
  if (buf && len > 0) {
    const std::size_t n = std::min(len - 1, out.size());
    std::memcpy(buf, out.data(), n);
    buf[n] = '\0';
  }
  return out.size();
}
