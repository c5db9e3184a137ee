// The exchange with one library's worker process (docs/plugins.md): the
// tensors laid out in one memfd — each region page-aligned, an output
// between canary bytes and guard pages, poisoned with NaN — the request and
// its reply over a SOCK_SEQPACKET socket, and the faults the worker reports
// turned into KernelFault messages naming the tensor and the byte.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kernels/plugin/protocol.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels::plugin {

// bench's repeats of one call of a `cuda` kernel (Worker::call): that
// many untimed calls, then that many timed; none for every other call.
struct Repeats {
  int untimed = 0, timed = 0;
};

// The worker of one library, started on the first call, kept alive across
// calls and started again after a failure. Calls are serialised.
class Worker {
 public:
  // `name_of(i)`: the op's name of tensor i (inputs, then outputs), for
  // messages.
  Worker(std::string worker, std::string lib, double timeout_s,
         std::function<std::string(int)> name_of);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Runs entry `kernel` of the library's table on `p`. Throws KernelFault
  // for the kernel's faults (a crash, a timeout, an error return, a write
  // outside its outputs), DeviceOutOfMemory when the device cannot hold the
  // tensors. `timed` (bench of a `cuda` kernel): the call repeated on the
  // resident device tensors, {untimed, timed} times, the timings returned.
  // `threads` > 0 reaches the kernel as the params' "threads".
  wire::Timing call(int kernel, const Problem& p, std::span<const TensorRef> inputs,
                    std::span<const TensorRef> outputs, std::uint64_t schedule_seed,
                    Repeats repeats = {}, int threads = 0);

  pid_t pid() const { return pid_; }

  // Ends the worker, if one runs: the next call starts a fresh one.
  void fresh() {
    std::lock_guard lock(mutex_);
    stop(/*graceful=*/false);
  }

  // The emulator's counters summed over the calls so far (empty: none).
  std::string simt_counters();

 private:
  void start();
  // Kills (or, when graceful, lets exit) and reaps the worker.
  void stop(bool graceful);
  [[noreturn]] void died(const std::string& context, const wire::Reply* fault,
                         const std::vector<std::string>& names);
  wire::Reply exchange(const wire::Request& q, int memfd);
  void add_counters(const nlohmann::json& c);

  std::function<std::string(int)> name_of_;
  std::mutex mutex_, counters_mutex_;
  std::map<std::string, std::uint64_t> counters_;
  wire::Request request_;                // the call in flight, for fault messages
  std::vector<std::size_t> data_bytes_;  // its tensors' data bytes
  std::string worker_, lib_;
  double timeout_s_;
  pid_t pid_ = -1;
  int sock_ = -1;
};

}  // namespace moacert::kernels::plugin
