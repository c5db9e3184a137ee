// The messages between moacert and its plugin worker (a separate process,
// `moacert-plugin-worker`): fixed-size records over a SOCK_SEQPACKET
// socket, the tensors in a memfd passed with each request (SCM_RIGHTS).
// Both sides are built from this one header, so its layout needs no
// versioning.
#pragma once

#include <cstdint>

namespace moacert::kernels::plugin::wire {

constexpr std::uint32_t kRequestMagic = 0x6d635271;  // "mcRq"
constexpr std::uint32_t kReplyMagic = 0x6d635270;    // "mcRp"
constexpr int kMaxTensors = 16;
constexpr int kMaxRank = 8;
constexpr int kParamsBytes = 1024;
constexpr int kMessageBytes = 1024;
constexpr int kNameBytes = 24;
// At most this many axes of an envelope, and values of an axis, are read
// from a plugin's table (ABI 2): more is garbage, which the loader refuses.
constexpr int kMaxAxes = 16;
constexpr int kMaxValues = 4096;
// bench times at most this many calls of a `cuda` kernel in one request.
constexpr int kMaxTimedCalls = 256;
// A plugin built against moacert/simt.h reports the emulator's counters and
// first hazard of the call as JSON (moacert_simt_take_report).
constexpr int kSimtReportBytes = 2048;

// The canary pattern of guard bytes (an output's slack in the memfd, the
// guards around a device tensor): byte i of a guard holds canary(i), so a
// stray write of any constant is seen.
inline std::uint8_t canary(std::uint64_t i) {
  return std::uint8_t(0xA5 ^ ((i * 0x3B) & 0xff));
}

// One tensor in the memfd. Its region [region_offset, region_offset +
// region_bytes) is page-aligned; the worker maps it between two PROT_NONE
// guard pages, read-only for an input. The data starts at data_offset
// inside the region; the rest of an output's region — at least 64 bytes
// on each side — is canary.
struct TensorDesc {
  std::uint8_t code = 0, bits = 0;  // DLDataType
  std::uint8_t output = 0;
  std::int32_t ndim = 0;
  std::uint64_t region_offset = 0, region_bytes = 0, data_offset = 0;
  std::int64_t shape[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};
  char name[kNameBytes] = {};  // the op's name of the tensor, for the emulator's messages
};

struct Request {
  std::uint32_t magic = kRequestMagic;
  std::int32_t kernel = 0;  // index into the library's kernel table
  std::int32_t n_inputs = 0, n_outputs = 0;
  std::uint64_t memfd_bytes = 0;
  TensorDesc tensors[kMaxTensors];  // inputs, then outputs
  char params[kParamsBytes] = {};   // JSON, NUL-terminated
  // The SIMT emulator's schedule seed (block order and interleaving) for a
  // plugin built against moacert/simt.h; derived from the case.
  std::uint64_t schedule_seed = 0;
  // bench of a `cuda` kernel (0 otherwise): the worker uploads the tensors
  // once, calls the kernel `timed_warmup` times untimed and then
  // `timed_calls` times, each timed by events on its stream (Reply::timing).
  std::int32_t timed_warmup = 0, timed_calls = 0;
};

// A `cuda` kernel's timings (Request::timed_calls), as bench reports them
// (kernels::DeviceTimes).
struct Timing {
  char clock[32] = {};  // "CUDA events", or "host clock" where the runtime has none
  std::int32_t calls = 0;
  double seconds[kMaxTimedCalls] = {};                          // each timed call, on the device
  double copy_to_device_seconds = 0, copy_to_device_bytes = 0;  // the inputs' data, once
  double copy_from_device_seconds = 0, copy_from_device_bytes = 0;  // the outputs' data, once
};

// Where a faulting address lies, as the worker's signal handler sees it.
enum class Where : std::int32_t {
  unknown,
  before_output,  // in the guard page before an output
  past_output,    // in the guard page after an output
  in_input,       // inside a read-only input (a write)
  near_input,     // in a guard page around an input
};

struct Reply {
  // device_fault: a device tensor's check failed after the call (a write
  // past it or into an input, on the device) or the device reported an
  // error; `message` says which, naming the tensor. ends_worker: the
  // worker exits after this reply (a CUDA error is sticky).
  // no_device_memory: the device could not hold the call's tensors (before
  // the call): the machine's limit, not the kernel's fault.
  enum Kind : std::int32_t { ok, error_return, fault, bad_request, device_fault, no_device_memory };
  std::uint32_t magic = kReplyMagic;
  Kind kind = ok;
  std::int32_t rc = 0;  // the kernel's return value
  std::int32_t signo = 0, si_code = 0;
  Where where = Where::unknown;
  std::int32_t tensor = -1;  // index into Request::tensors
  std::uint64_t addr = 0;
  std::int64_t offset = 0;  // of the faulting address from the tensor's region start
  std::int32_t write = -1;  // 1 a write, 0 a read, -1 unknown (from the page fault's error code)
  std::int32_t ends_worker = 0;      // 1: the worker exits after this reply
  char message[kMessageBytes] = {};  // the kernel's err, or why a request was bad
  // (a fault: the SIMT emulator's own message when it recognised the fault,
  // e.g. a fiber's stack overflow)
  char simt_report[kSimtReportBytes] = {};  // JSON, or empty: no emulator in the plugin
  Timing timing;                            // when the request asked for timed calls
};

}  // namespace moacert::kernels::plugin::wire
