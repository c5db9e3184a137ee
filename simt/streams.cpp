// Streams and events as CUDA's runtime defines them. The emulator runs
// every launch and copy to its end before its call returns; what it keeps
// here is the order a GPU would give them: each stream's works in turn,
// the legacy default stream's after the blocking streams' earlier ones and
// theirs after its, an event's point, a stream waiting for one, the host
// waiting for a stream, an event or the device. Work that touches memory
// an unordered work wrote (or writes memory it touched) is a `stream race`;
// work the plugin's call returns before is `unsynchronised work`, since
// moacert copies the outputs back then (docs/simt.md#streams).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

#include "simt/state.hpp"

struct CUstream_st {
  std::size_t index;
};
struct CUevent_st {
  moacert::simt::detail::Clock clock;  // the works ordered before the point it records
  std::chrono::steady_clock::time_point at;
  bool recorded = false;
};

namespace moacert::simt::detail {

namespace {

Order& order() {
  return runtime.order;
}

void join(Clock& into, const Clock& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (std::size_t k = 0; k < from.size(); ++k) into[k] = std::max(into[k], from[k]);
}
std::uint64_t at(const Clock& c, std::size_t k) {
  return k < c.size() ? c[k] : 0;
}

// What a work enqueued now on stream `index` is ordered after: the
// stream's earlier work and what that was ordered after, what the host has
// waited for, and the legacy default stream's implicit synchronisation.
Clock ordered_before_next(std::size_t index) {
  Order& o = order();
  Clock c = o.streams[index].tail;
  join(c, o.host);
  if (index == 0) {
    for (const StreamRecord& s : o.streams)
      if (s.blocking) join(c, s.tail);
  } else if (o.streams[index].blocking) {
    join(c, o.streams[0].tail);
  }
  return c;
}

bool overlap(const Touch& a, const Touch& b) {
  return a.lo < b.hi && b.lo < a.hi && (a.write || b.write);
}

std::string race(const Work& later, const Work& earlier) {
  for (const Touch& t : later.touches)
    for (const Touch& u : earlier.touches)
      if (overlap(t, u))
        return "moacert simt: stream race: " + later.what + " on " + stream_name(later.stream) +
               (t.write ? " writes '" : " reads '") + t.name + "' while " + earlier.what + " on " +
               stream_name(earlier.stream) + (u.write ? " writes" : " reads") +
               " it, and nothing orders the two (synchronise, or cudaEventRecord on the one "
               "and cudaStreamWaitEvent on the other)";
  return "";
}

bool covered(const Clock& c, const Clock& by) {
  for (std::size_t k = 0; k < c.size(); ++k)
    if (c[k] > at(by, k)) return false;
  return true;
}

// The host has waited for everything `c` holds: the work it orders is
// done, and a destroyed stream all of whose tail it holds is retired.
void host_waits(const Clock& c) {
  Order& o = order();
  join(o.host, c);
  std::erase_if(o.pending, [&](const Work& w) { return w.seq <= at(o.host, w.stream); });
  for (StreamRecord& s : o.streams)
    if (s.destroyed && !s.retired && covered(s.tail, o.host)) {
      s.retired = true;
      Clock().swap(s.tail);
    }
}

cudaError_t fail(cudaError_t e) {
  return runtime.last_error = e;
}

// What a synchronisation returns: the error of the work it waited for (a
// launch that failed), not an earlier call's argument error.
cudaError_t work_error() {
  return runtime.last_error == cudaErrorLaunchFailure ? cudaErrorLaunchFailure : cudaSuccess;
}

CUevent_st* live_event(cudaEvent_t e) {
  return order().events.contains(e) ? e : nullptr;
}

}  // namespace

long stream_index(const void* stream) {
  if (!stream) return 0;
  const auto& live = order().streams_by_handle;
  const auto it = live.find(stream);
  return it == live.end() ? -1 : long(it->second);
}
std::string stream_name(std::size_t index) {
  return index == 0 ? "the legacy default stream" : "stream #" + std::to_string(index);
}

std::string enqueue_work(std::size_t index, std::string what, std::vector<Touch> touches) {
  Order& o = order();
  Clock c = ordered_before_next(index);
  StreamRecord& s = o.streams[index];
  c.resize(o.streams.size(), 0);
  c[index] = ++s.enqueued;
  s.tail = c;
  Work w{std::move(what), index, s.enqueued, std::move(touches)};
  std::string why;
  for (const Work& p : o.pending)
    if (p.stream != index && p.seq > at(c, p.stream) && why.empty()) why = race(w, p);
  o.pending.push_back(std::move(w));
  // While no non-blocking stream lives, work the legacy default stream is
  // ordered after is ordered before every later work on it and on the
  // blocking streams, and before every return: forgotten, so that a
  // program that never synchronises keeps no history. (A non-blocking
  // stream created later is ordered after none of it: a race with it is
  // missed.)
  const bool all_blocking =
      std::all_of(o.streams.begin(), o.streams.end(),
                  [](const StreamRecord& r) { return r.blocking || r.retired; });
  if (index == 0 && all_blocking)
    std::erase_if(o.pending, [&](const Work& p) { return p.seq <= at(c, p.stream); });
  return why;
}

void host_waits_for(std::size_t index) {
  host_waits(order().streams[index].tail);
}
void host_waits_for_device() {
  Clock all;
  for (const StreamRecord& s : order().streams) join(all, s.tail);
  host_waits(all);
}

Touch touch_of(const void* p, std::size_t bytes, bool write) {
  const auto lo = reinterpret_cast<std::uintptr_t>(p);
  const Buffer* b = find_buffer(lo);
  char fallback[48];
  std::snprintf(fallback, sizeof fallback, "device memory at %p", p);
  return {lo, lo + bytes, write, b ? b->counts.name : std::string(fallback)};
}

void report_runtime_hazard(const std::string& kind, const std::string& message) {
  if (!runtime.report_hazard.empty()) return;
  runtime.report_hazard_kind = kind;
  runtime.report_hazard = message;
}

}  // namespace moacert::simt::detail

using namespace moacert::simt;
using detail::runtime;

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  if (!stream || (flags & ~cudaStreamNonBlocking)) return detail::fail(cudaErrorInvalidValue);
  std::lock_guard lock(runtime.mutex);
  detail::Order& o = runtime.order;
  const std::size_t index = o.streams.size();
  o.streams.push_back({(flags & cudaStreamNonBlocking) == 0, 0, o.host});
  *stream = new CUstream_st{index};
  o.streams_by_handle[*stream] = index;
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}
// Its work goes on (and stays pending) after it is destroyed, as on a GPU.
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  std::lock_guard lock(runtime.mutex);
  if (!stream || !runtime.order.streams_by_handle.erase(stream))
    return detail::fail(cudaErrorInvalidResourceHandle);
  runtime.order.streams[stream->index].destroyed = true;
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  std::lock_guard lock(runtime.mutex);
  const long index = detail::stream_index(stream);
  if (index < 0) return detail::fail(cudaErrorInvalidResourceHandle);
  detail::host_waits_for(std::size_t(index));
  return detail::work_error();
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags) {
  std::lock_guard lock(runtime.mutex);
  const long index = detail::stream_index(stream);
  if (index < 0 || !detail::live_event(event)) return detail::fail(cudaErrorInvalidResourceHandle);
  if (flags != 0) return detail::fail(cudaErrorInvalidValue);
  detail::join(runtime.order.streams[std::size_t(index)].tail, event->clock);
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (!event || flags != cudaEventDefault) return detail::fail(cudaErrorInvalidValue);
  std::lock_guard lock(runtime.mutex);
  *event = new CUevent_st;
  runtime.order.events.insert(*event);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}
// The point: the work enqueued on the stream so far (and, on the legacy
// default stream, what its next work would wait for). Its time is the
// host's clock: that work has run to its end already.
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  std::lock_guard lock(runtime.mutex);
  const long index = detail::stream_index(stream);
  if (index < 0 || !detail::live_event(event)) return detail::fail(cudaErrorInvalidResourceHandle);
  event->clock = detail::ordered_before_next(std::size_t(index));
  event->at = std::chrono::steady_clock::now();
  event->recorded = true;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  std::lock_guard lock(runtime.mutex);
  if (!detail::live_event(event)) return detail::fail(cudaErrorInvalidResourceHandle);
  detail::host_waits(event->clock);
  return detail::work_error();
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  std::lock_guard lock(runtime.mutex);
  if (!detail::live_event(start) || !detail::live_event(stop))
    return detail::fail(cudaErrorInvalidResourceHandle);
  if (!ms || !start->recorded || !stop->recorded) return detail::fail(cudaErrorInvalidValue);
  *ms = std::chrono::duration<float, std::milli>(stop->at - start->at).count();
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  std::lock_guard lock(runtime.mutex);
  if (!runtime.order.events.erase(event)) return detail::fail(cudaErrorInvalidResourceHandle);
  delete event;
  return cudaSuccess;
}

// The plugin's call returns: what the stream moacert handed it is ordered
// after, and what the host waited for, must hold every work of the call.
extern "C" void moacert_simt_call_returns(void* stream) {
  std::lock_guard lock(runtime.mutex);
  detail::Order& o = runtime.order;
  const long handed = detail::stream_index(stream);
  detail::Clock done = detail::ordered_before_next(handed < 0 ? 0 : std::size_t(handed));
  for (const detail::Work& w : o.pending)
    if (w.seq > detail::at(done, w.stream)) {
      detail::report_runtime_hazard(
          "unsynchronised work",
          "moacert simt: unsynchronised work: " + w.what + " on " + detail::stream_name(w.stream) +
              " is not ordered before the call returns (moacert copies the outputs back then, "
              "after " +
              detail::stream_name(handed < 0 ? 0 : std::size_t(handed)) +
              ", the stream it hands the call): synchronise it, or make that stream wait for it "
              "(cudaEventRecord, cudaStreamWaitEvent)");
      break;
    }
  detail::host_waits_for_device();  // the worker synchronises next
}

// Under C names, for moacert's plugin worker (simt.h).
extern "C" int moacert_simt_cudaStreamCreate(void** stream) {
  return cudaStreamCreate(reinterpret_cast<cudaStream_t*>(stream));
}
extern "C" int moacert_simt_cudaStreamSynchronize(void* stream) {
  return cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
}
extern "C" int moacert_simt_cudaEventCreate(void** event) {
  return cudaEventCreate(reinterpret_cast<cudaEvent_t*>(event));
}
extern "C" int moacert_simt_cudaEventRecord(void* event, void* stream) {
  return cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream));
}
extern "C" int moacert_simt_cudaEventSynchronize(void* event) {
  return cudaEventSynchronize(static_cast<cudaEvent_t>(event));
}
extern "C" int moacert_simt_cudaEventElapsedTime(float* ms, void* start, void* stop) {
  return cudaEventElapsedTime(ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(stop));
}
extern "C" int moacert_simt_cudaEventDestroy(void* event) {
  return cudaEventDestroy(static_cast<cudaEvent_t>(event));
}
