// The kernel registry: every ONF realisation moacert can run, whatever its
// backend (cpu, cuda, torch, plugin), behind one entry type. The property
// engine, `certify`, `bench` and `list` see only this interface, so a new
// backend joins by registering variants.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/envelope.hpp"
#include "kernels/instrumentation.hpp"
#include "reference/arithmetic.hpp"
#include "reference/conventions.hpp"
#include "reference/problem.hpp"
#include "reference/tensor.hpp"

namespace moacert::kernels {

// The ONF's cost of one call, as a function of the problem: what `bench`
// divides by time, and what `list` shows. Bytes count each tensor once.
struct Cost {
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
  double atomics = 0;           // atomic read-modify-writes
  double peak_extra_bytes = 0;  // scratch beyond inputs and outputs, all threads
};

// A kernel that crashed, hung, returned an error or wrote outside its
// outputs (an isolated plugin, kernels/plugin/): a counterexample to
// certify, not a failure of moacert. `hang` says the call timed out, so
// that shrinking does not spend a timeout per candidate.
class KernelFault : public std::runtime_error {
 public:
  KernelFault(const std::string& why, bool hang) : std::runtime_error(why), hang_(hang) {}
  bool hang() const { return hang_; }

 private:
  bool hang_;
};

// A kernel's refusal of a problem (a plugin's run returned
// MOACERT_UNSUPPORTED). Inside the kernel's own envelope it is a fault
// like any other; outside it, a problem the kernel never claimed, which
// is counted, never a counterexample.
class Unsupported : public KernelFault {
 public:
  explicit Unsupported(const std::string& why) : KernelFault(why, false) {}
};

// The device could not hold a call's tensors (cudaMalloc's out of
// memory before the kernel ran): the machine's limit, not the kernel's
// fault, so never a counterexample; the command stops with one line.
class DeviceOutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RunOptions {
  int threads = 0;  // 0: the OpenMP default
  // The SIMT emulator's schedule (block order, fiber interleaving) of a
  // kernel built against moacert/simt.h: derived from the case, so that
  // `reproduce TOKEN` replays it (docs/simt.md#schedule).
  std::uint64_t schedule_seed = 0;
  // A kernel may keep its scratch for the next call (bench's repeated calls
  // of one shape, spared the first-touch page faults of fresh buffers).
  // certify (properties::run_variant) asks it not to: the memory budget
  // counts a case's scratch only while its kernels run (cli/budget.hpp),
  // and a large case's, kept, would sit under the next case's oracle.
  bool keep_workspaces = true;
};

// Runs one call. Inputs and outputs come in the ops-table order with the
// dtype of the problem's format (int64 for lens); a variant that does not
// accept strided tensors receives row-major contiguous ones. Throws
// std::exception with a message on a problem it cannot run.
using RunFn = std::function<void(const Problem&, std::span<const TensorRef> inputs,
                                 std::span<const TensorRef> outputs, const RunOptions&)>;
using CostFn = std::function<Cost(const Problem&)>;

// How `bench` times a device backend's launches (Variant::time_on_device):
// `warmup` untimed calls' launches, then `repeats` timed ones.
struct DeviceTimingOptions {
  int warmup = 1;
  int repeats = 5;
};

// A device backend's timings of one problem: the launches alone, with the
// inputs resident on the device and the outputs allocated once, and the
// host<->device copies apart (docs/design.md, `bench`).
struct DeviceTimes {
  std::string clock;                  // what timed the launches: "CUDA events", "host clock"
  std::vector<double> launches;       // seconds, each timed call's launches
  double copy_to_device_seconds = 0;  // every input to the device, once
  double copy_to_device_bytes = 0;
  double copy_from_device_seconds = 0;  // every output back, once
  double copy_from_device_bytes = 0;
};
using DeviceTimeFn =
    std::function<DeviceTimes(const Problem&, std::span<const TensorRef> inputs,
                              std::span<const TensorRef> outputs, const DeviceTimingOptions&)>;

// What a variant is to certify, whatever its name and backend: the DNF's
// own evaluation (cpu.dnf: the baseline, never an ONF under test in the
// equivalence report), a built-in ONF, PyTorch (the reference the vs-torch
// rule and the equivalence report compare with), or a user's plugin.
enum class Role { dnf, onf, torch, plugin };

// "dnf", "onf", "torch", "plugin": as the certificate writes it.
std::string_view name(Role r);

struct Variant {
  std::string name;  // "cpu.flash", "torch", "cuda.fused_v1", "plugin:lib.so#name"
  Op op;
  std::string backend;  // "cpu", "cuda", "simt", "torch", "plugin"
  Role role = Role::onf;
  std::vector<Format> formats;
  bool accepts_strided = false;
  bool deterministic = false;  // bitwise equal on every run and thread count
  std::string summary;         // one line: the ONF in words

  const std::string& family() const { return family_name.empty() ? name : family_name; }
  CostFn cost;
  RunFn run;
  std::vector<moa::extent_t> tiles;  // tile extents of its loop nest: generators straddle them
  // The problems the kernel supports: as a plugin of ABI 2 or a worker's
  // handshake declares them, or a built-in variant's compiled maxima (the
  // CUDA kernels' shared tiles hold D <= 128). certify draws its cases
  // within it, as within --shape.
  Envelope envelope;
  // The envelope as a user's kernel declared it (Role::plugin: a plugin's,
  // a worker's), which certify prints and the certificate records; none
  // for a built-in variant, whose compiled maxima narrow its cases all the
  // same but leave its certificates as they were.
  Envelope declared_envelope() const { return role == Role::plugin ? envelope : Envelope{}; }
  // How far certify draws the axes --shape leaves free, where that is
  // short of what the kernel supports because a case past it takes too
  // long (the SIMT emulator's token counts: kernels/cuda/backend_glue.hpp,
  // BackendHooks::token_reach), and why. --shape reaches past it; certify
  // prints and the certificate records what it excludes
  // (docs/design.md#envelope).
  Envelope reach;
  std::string reach_why;
  // Variants of different ops that share one loop nest (cpu.flash's forward
  // inside cpu.fused, cpu.flash_bwd's backward too) name the same family;
  // empty means its own name.
  std::string family_name;
  // Bitwise the same result whatever the input layouts: false when packing
  // or a contiguous fast path changes the order of a reduction (the results
  // then agree within the rule instead).
  bool same_bits_any_layout = true;
  // Where a call runs, for the certificate: "host emulator", a GPU's name
  // and driver; empty for this machine's CPU.
  std::string where;
  // How it computes where it departs from docs/bounds.md's standard model
  // (tensor-core accumulation, weights rounded to storage before P V):
  // certify's a priori bounds are derived for what it declares.
  Arithmetic arithmetic;
  // How it takes its problem where deployed libraries differ from moacert's
  // convention (reference/conventions.hpp): the outputs it does not
  // produce, its causal alignment, its parameters' format. certify
  // evaluates the DNF for the problem as it takes it and judges only what
  // it produces. A plugin's ABI 4 entry or a worker's handshake declares
  // it; built-in variants keep moacert's own.
  Conventions conventions;
  // What a counting backend says of its calls (kernels/instrumentation.hpp):
  // set by kernels/cuda/'s simt.* variants and a plugin built against
  // moacert/simt.h; null for kernels that count nothing.
  std::shared_ptr<Instrumentation> instrumentation;
  // Backends whose kernels run in device memory (kernels/cuda/'s cuda.* and
  // simt.* variants): `bench`'s timings of the launches alone and of the
  // copies apart. Null for host kernels, which bench times call by call.
  DeviceTimeFn time_on_device;
  // Variants whose calls run in a process kept from call to call (a
  // plugin's worker, a worker command's process): ends that process, so
  // that the next call starts in a fresh one. certify runs a failure again
  // there, to tell a kernel's fault from state earlier calls left
  // (docs/design.md#certify); null for variants that run in moacert's own.
  std::function<void()> fresh_process;
  // A host kernel of this process (the built-in CPU ONFs and the DNF,
  // kernels/cpu/register.cpp): its calls keep nothing from one to the
  // next and may run at once on threads of this process, and a call with
  // threads 0 runs omp_get_max_threads() OpenMP threads. certify judges
  // such a variant's cases --jobs at a time (properties::jobs_for) and
  // lets its case's own run stand for one of the determinism check's
  // (docs/design.md#jobs, #certify). False for every other backend.
  bool host_threads = false;

  bool supports(Format f) const;
};

class Registry {
 public:
  // The variants built into this binary (CPU always; CUDA and LibTorch when
  // this build has them).
  static const Registry& builtin();

  void add(Variant v);
  const Variant* find(Op op, std::string_view name) const;
  // The variant of `op` of that family (Variant::family()), if any.
  const Variant* find_family(Op op, std::string_view family) const;
  // The first variant of `op` with that role (PyTorch's, the DNF's), if any.
  const Variant* find_role(Op op, Role role) const;
  std::vector<const Variant*> of(Op op) const;
  const std::vector<Variant>& all() const { return variants_; }

 private:
  std::vector<Variant> variants_;
};

// Validates the problem and checks that a call's tensors have the op's arity
// and the problem's shapes; throws std::invalid_argument naming the first
// tensor that does not. For the start of a variant's run().
void check_tensors(const Problem& p, std::span<const TensorRef> inputs,
                   std::span<const TensorRef> outputs);

// Each backend registers its variants here; builtin() calls those this build
// has.
void register_cpu_kernels(Registry& r);
void register_torch_kernels(Registry& r);  // when the LibTorch adaptor is built
// kernels/cuda/'s ONFs: on the host emulator always (`simt.<name>`), on
// the GPU when the CUDA adaptor is built and a device is present
// (`cuda.<name>`).
void register_simt_kernels(Registry& r);
void register_cuda_kernels(Registry& r);
// Why the emulator refuses its settings (a MOACERT_SIMT_* value out of
// range, simt/settings.cpp), or empty (kernels/cuda/simt_backend.cpp).
std::string simt_settings_error();

// Why `v` cannot run in this process, in one phrase: its backend's
// settings refused (a simt.* variant under a malformed MOACERT_SIMT_*
// value); empty when it can. certify and reproduce refuse such a variant
// (exit 2) before any case, as the plugin loader refuses an emulator
// plugin's device.
std::string cannot_run(const Variant& v);

// Which optional backends this build has.
struct Backends {
  bool torch, cuda, mpi;
};
Backends backends();

}  // namespace moacert::kernels
