// The host side of the CUDA attention ONFs, written once for both backends:
// a registry call copies each tensor's storage to device memory, hands the
// launcher its pointers and strides, and copies the outputs back. Included
// by simt_backend.cpp (the host emulator, variants `simt.<name>`) and by
// cuda_adaptor.cu (the device, `cuda.<name>`), after the CUDA language
// (kernels/cuda/cuda_compat.cuh) and with MOACERT_CUDA_NS naming the
// backend.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/cuda/attention_args.hpp"
#include "kernels/cuda/cost.hpp"
#include "kernels/cuda/rows_args.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels::MOACERT_CUDA_NS {

// A launch or memory error: a counterexample with CUDA's own words, never a
// crash of moacert.
inline void check_cuda(cudaError_t e, const std::string& variant, const char* what) {
  if (e != cudaSuccess)
    throw KernelFault(variant + ": " + what + ": " + cudaGetErrorString(e), /*hang=*/false);
}

// One tensor's storage (its layout's cosize) in device memory, named as
// the op names it ("q", "dk"): the emulator counts its traffic under that
// name (the cost functions' per-tensor model, kernels/cuda/cost.hpp).
class DeviceTensor {
 public:
  DeviceTensor(const TensorRef& t, std::string_view name, const std::string& variant, bool copy_in)
      : host_(t) {
    bytes_ = static_cast<std::size_t>(t.layout.cosize()) * dtype_bytes(t.dtype);
    check_cuda(cudaMalloc(&data_, bytes_ ? bytes_ : 1), variant, "cudaMalloc");
    moacert_simt_name_buffer(data_, std::string(name).c_str());
    if (copy_in) this->copy_in(variant);
  }
  ~DeviceTensor() { cudaFree(data_); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  void copy_in(const std::string& variant) const {
    if (bytes_)
      check_cuda(cudaMemcpy(data_, host_.data, bytes_, cudaMemcpyHostToDevice), variant,
                 "cudaMemcpy to the device");
  }
  void copy_out(const std::string& variant) const {
    if (bytes_)
      check_cuda(cudaMemcpy(host_.data, data_, bytes_, cudaMemcpyDeviceToHost), variant,
                 "cudaMemcpy from the device");
  }
  Tensor4 t4() const {
    const auto s = host_.layout.strides();
    return {data_, {s[0], s[1], s[2], s[3]}};
  }
  Tensor3 t3() const {
    const auto s = host_.layout.strides();
    return {data_, {s[0], s[1], s[2]}};
  }
  Tensor2 t2() const {
    const auto s = host_.layout.strides();
    return {data_, {s[0], s[1]}};
  }
  Tensor1 t1() const { return {data_, host_.layout.strides()[0]}; }
  std::size_t bytes() const { return bytes_; }

 private:
  TensorRef host_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// The problems these kernels are compiled for, as an envelope: the shared
// tiles of attention hold D <= kMaxD (certify draws inside it; the
// certificate records none, Variant::declared_envelope).
inline Envelope compiled_envelope(Op op) {
  Envelope e;
  if (is_attention(op)) {
    AxisEnvelope head_width;
    head_width.hi = cuda_cost::kMaxD;
    e.axes.emplace_back("D", head_width);
  }
  return e;
}

// What a problem must be for these kernels; refused before any launch.
// `formats`: the variant's, the storage its launcher is compiled for.
inline void check_supported(const std::string& variant, const std::vector<Format>& formats,
                            const Problem& p) {
  if (std::find(formats.begin(), formats.end(), p.format) == formats.end()) {
    std::string compiled;
    for (Format f : formats) compiled += (compiled.empty() ? "" : ", ") + std::string(name(f));
    throw std::invalid_argument(variant + ": format " + std::string(name(p.format)) +
                                " is not compiled (storage: " + compiled + ")");
  }
  // A problem past the compiled tiles, which certify never draws
  // (compiled_envelope) but bench or a direct call may ask.
  if (const std::string why = compiled_envelope(p.op).why_outside(p); !why.empty())
    throw std::invalid_argument(variant + ": " + why + ", the compiled envelope");
  const Dims& d = p.dims;
  for (moa::extent_t e : {d.B, d.H, d.N, d.M, d.D, d.T, d.Dm, d.F}) {
    if (e > (1 << 24))
      throw std::invalid_argument(variant + ": an extent above 2^24 (the kernels index with int)");
  }
}

// The problem's Dims as the kernels read them, narrowed to int: exact for
// every problem check_supported admits (each extent at most 2^24). The one
// place AttnDims is built.
inline AttnDims attn_dims(const Problem& p) {
  const Dims& d = p.dims;
  return {int(d.B), int(d.H), int(d.Hkv),       int(d.N),
          int(d.M), int(d.D), float(p.scale()), p.causal()};
}

inline Storage storage_of(const Problem& p) {
  switch (p.format) {
    case Format::bf16:
      return Storage::bf16;
    case Format::f16:
      return Storage::f16;
    default:
      return Storage::f32;  // f64 never passes check_supported
  }
}

using Tensors = std::vector<std::unique_ptr<DeviceTensor>>;

// One call's launches on resident tensors, a launch error or (emulator) a
// hazard turned into a counterexample; asynchronous on the device.
template <class Launch>
void launch_checked(const std::string& variant, const Problem& p, const Tensors& in,
                    const Tensors& out, Launch launch) {
#if defined(__CUDACC__)
  check_cuda(static_cast<cudaError_t>(launch(p, in, out)), variant, "launch");
#else
  try {
    check_cuda(static_cast<cudaError_t>(launch(p, in, out)), variant, "launch");
  } catch (const ::moacert::simt::Hazard& h) {  // a race, a divergent barrier, out of bounds...
    throw KernelFault(variant + ": " + h.kind() + ": " + h.what(), /*hang=*/h.kind() == "deadlock");
  }
#endif
}

// The device copies of a call's tensors, named as the op names them; with
// `copy_in`, their contents too (outputs included, so that a padded
// layout's gaps come back as they were).
inline Tensors to_device(const std::string& variant, std::span<const TensorRef> tensors,
                         const std::vector<std::string_view>& names, bool copy_in) {
  Tensors t;
  for (std::size_t i = 0; i < tensors.size(); ++i)
    t.push_back(std::make_unique<DeviceTensor>(tensors[i], names[i], variant, copy_in));
  return t;
}

// Every tensor to the device, the launcher, the outputs back. `launch`
// builds its arguments from the device tensors (inputs, then outputs).
template <class Launch>
void run_on_device(const std::string& variant, const Problem& p, std::span<const TensorRef> inputs,
                   std::span<const TensorRef> outputs, Launch launch) {
  const OpInfo& op = info(p.op);
  const Tensors in = to_device(variant, inputs, op.inputs, true);
  const Tensors out = to_device(variant, outputs, op.outputs, true);
  launch_checked(variant, p, in, out, launch);
  check_cuda(cudaDeviceSynchronize(), variant, "kernel");
  for (const auto& t : out) t->copy_out(variant);
}

// What times one call's launches, enqueued by `launches`, to their end: the
// device's CUDA events (cuda_adaptor.cu), or by default the host's clock
// around the launches and a synchronisation (the emulator, whose launches
// run on the calling thread).
struct LaunchTimer {
  std::string clock = "host clock";
  std::function<double(const std::string& variant, const std::function<void()>& launches)> time =
      [](const std::string& variant, const std::function<void()>& launches) {
        const auto start = std::chrono::steady_clock::now();
        launches();
        check_cuda(cudaDeviceSynchronize(), variant, "kernel");
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      };
};

// bench's timings of one problem (Variant::time_on_device): the inputs
// copied to the device once and the outputs allocated once, both outside
// the timed launches; `warmup` calls' launches untimed, then each of
// `repeats` timed by `timer`; the copies, synchronous, timed apart by the
// host's clock. A launcher's own scratch (the f32 accumulators of the
// atomic variants) is allocated per call inside its launches, as in every
// call.
template <class Launch>
DeviceTimes time_on_device(const std::string& variant, const Problem& p,
                           std::span<const TensorRef> inputs, std::span<const TensorRef> outputs,
                           Launch launch, const LaunchTimer& timer,
                           const DeviceTimingOptions& opt) {
  using clock = std::chrono::steady_clock;
  const auto since = [](clock::time_point t0) {
    return std::chrono::duration<double>(clock::now() - t0).count();
  };
  const OpInfo& op = info(p.op);
  DeviceTimes times;
  times.clock = timer.clock;
  const Tensors in = to_device(variant, inputs, op.inputs, false);
  const Tensors out = to_device(variant, outputs, op.outputs, false);
  check_cuda(cudaDeviceSynchronize(), variant, "cudaMalloc");

  const clock::time_point copy_in = clock::now();
  for (const auto& t : in) {
    t->copy_in(variant);
    times.copy_to_device_bytes += double(t->bytes());
  }
  times.copy_to_device_seconds = since(copy_in);

  const auto launches = [&] { launch_checked(variant, p, in, out, launch); };
  for (int w = 0; w < opt.warmup; ++w) launches();
  check_cuda(cudaDeviceSynchronize(), variant, "kernel");
  for (int k = 0; k < opt.repeats; ++k) times.launches.push_back(timer.time(variant, launches));

  const clock::time_point copy_out = clock::now();
  for (const auto& t : out) {
    t->copy_out(variant);
    times.copy_from_device_bytes += double(t->bytes());
  }
  times.copy_from_device_seconds = since(copy_out);
  return times;
}

// One launcher per ONF, from the device tensors in the ops-table order.
using LaunchFn = int (*)(const Problem&, const Tensors& in, const Tensors& out);

template <int (*kLauncher)(const FwdBwdArgs&)>
int fwdbwd(const Problem& p, const Tensors& in, const Tensors& out) {
  return kLauncher({attn_dims(p), storage_of(p), in[0]->t4(), in[1]->t4(), in[2]->t4(), in[3]->t4(),
                    out[0]->t4(), out[1]->t3(), out[2]->t4(), out[3]->t4(), out[4]->t4()});
}

template <int (*kLauncher)(const BwdArgs&)>
int bwd(const Problem& p, const Tensors& in, const Tensors& out) {
  return kLauncher({attn_dims(p), storage_of(p), in[0]->t4(), in[1]->t4(), in[2]->t4(), in[3]->t4(),
                    in[4]->t3(), in[5]->t4(), out[0]->t4(), out[1]->t4(), out[2]->t4()});
}

inline int fwd(const Problem& p, const Tensors& in, const Tensors& out) {
  return launch_flash_fwd({attn_dims(p), storage_of(p), in[0]->t4(), in[1]->t4(), in[2]->t4(),
                           out[0]->t4(), out[1]->t3()});
}

inline int fwd_tc(const Problem& p, const Tensors& in, const Tensors& out) {
  return launch_flash_tc({attn_dims(p), storage_of(p), in[0]->t4(), in[1]->t4(), in[2]->t4(),
                          out[0]->t4(), out[1]->t3()});
}

inline int decode(const Problem& p, const Tensors& in, const Tensors& out) {
  return launch_decode({attn_dims(p), storage_of(p), in[0]->t4(), in[1]->t4(), in[2]->t4(),
                        in[3]->t1(), out[0]->t4(), out[1]->t3()});
}

inline int rmsnorm(const Problem& p, const Tensors& in, const Tensors& out) {
  return launch_rmsnorm({int(p.dims.T), int(p.dims.D), float(p.params.eps), storage_of(p),
                         in[0]->t2(), in[1]->t1(), out[0]->t2()});
}

inline int swiglu(const Problem& p, const Tensors& in, const Tensors& out) {
  return launch_swiglu({int(p.dims.T), int(p.dims.Dm), int(p.dims.F), storage_of(p), in[0]->t2(),
                        in[1]->t2(), in[2]->t2(), in[3]->t2(), out[0]->t2()});
}

// The registry entries of one backend ("simt" or "cuda"): the same ONFs,
// the same cost functions, `where` in each summary.
struct BackendHooks {
  std::function<void(const RunOptions&)> before_run;  // e.g. seed the emulator's schedule
  // After a call that ran to the end: e.g. check its counts against the
  // ONF's cost function.
  std::function<void(const std::string& onf, const Problem&, std::span<const TensorRef> in)>
      after_run;
  // What the backend counts of its calls (kernels/instrumentation.hpp), one
  // object shared by its variants; null on the device, which counts nothing.
  std::shared_ptr<Instrumentation> instrumentation;
  LaunchTimer timer;  // what times bench's launches
  // How many rows T certify draws where --shape leaves them free (0: the
  // deployment envelope's): the emulator's, which runs some
  // 10^4 blocks a second, short of the 2^17 deployed prefills reach
  // (Variant::reach), with why.
  moa::extent_t token_reach = 0;
  std::string token_reach_why;
};

// The head widths the tensor-core ONFs are compiled for (their fragments
// tile D by 16, their shared tiles hold D <= 128).
inline Envelope tensor_core_envelope() {
  AxisEnvelope d;
  d.lo = 64;
  d.hi = 128;
  d.values = {64, 128};
  Envelope e;
  e.axes.emplace_back("D", d);
  return e;
}

inline void register_onfs(Registry& r, const std::string& backend, const std::string& where,
                          const BackendHooks& hooks = {}) {
  struct Entry {
    const char* onf;
    Op op;
    bool deterministic;
    LaunchFn launch;
    const char* summary;
    // Both products on tensor cores (mma.m16n8k16, b16 in, f32 accumulate;
    // docs/cuda.md#tensor-core-onfs): bf16 or f16 storage (the mma's inputs,
    // dispatch_b16), contiguous q, k, v (cp.async copies whole 16-byte
    // rows), head widths D in {64, 128}.
    bool tensor_core = false;
  };
  const Entry entries[] = {
      {"flash", Op::attention_fwd, true, &fwd,
       "16x16 tiles, K/V tiles in shared memory, online softmax, fully masked tiles skipped"},
      {"flash_tc", Op::attention_fwd, true, &fwd_tc,
       "tensor cores (mma m16n8k16 bf16/f16, f32 acc): 4 warps x 16 query rows, 32-key K/V tiles "
       "double-buffered by cp.async, read by ldmatrix; D in {64, 128}",
       /*tensor_core=*/true},
      {"fused_v1", Op::attention_fwdbwd, false, &fwdbwd<&launch_fused_v1>,
       "one kernel over query tiles: forward, D_i, dQ in shared memory, dK and dV by atomics"},
      {"fused_v3", Op::attention_fwdbwd, false, &fwdbwd<&launch_fused_v3>,
       "fused_v1 with dV by its own kernel over key tiles: only dK by atomics"},
      {"fused_det", Op::attention_fwdbwd, true, &fwdbwd<&launch_fused_det>,
       "no float atomics: dQ over query tiles, dK and dV in registers over key tiles"},
      {"bwd_atomic", Op::attention_bwd, false, &bwd<&launch_bwd_atomic>,
       "three kernels: D = rowsum(dO o O); dV over key tiles; dQ and dK, dK by atomics"},
      {"bwd_fa2", Op::attention_bwd, false, &bwd<&launch_bwd_fa2>,
       "FlashAttention-2's form: dK and dV in registers per key tile, dQ by atomics"},
      {"bwd_tc", Op::attention_bwd, false, &bwd<&launch_bwd_tc>,
       "tensor cores (mma m16n8k16 bf16/f16, f32 acc), FlashAttention-2's form: 4 warps per 32-key "
       "tile, dK and dV in fragments, 16-row Q/dO tiles double-buffered by cp.async, dQ by "
       "atomics; D in {64, 128}",
       /*tensor_core=*/true},
      {"fused_v1_tc", Op::attention_fwdbwd, false, &fwdbwd<&launch_fused_v1_tc>,
       "tensor cores: flash_tc's forward, D_i, then over 16-row query tiles bwd_tc's pair steps "
       "with 32-key K/V tiles double-buffered by cp.async, dQ in fragments, dK and dV by "
       "atomics; D in {64, 128}",
       /*tensor_core=*/true},
      {"fused_v3_tc", Op::attention_fwdbwd, false, &fwdbwd<&launch_fused_v3_tc>,
       "tensor cores: fused_v1_tc with dV by its own kernel over 32-key tiles: only dK by atomics",
       /*tensor_core=*/true},
      {"fused_det_tc", Op::attention_fwdbwd, true, &fwdbwd<&launch_fused_det_tc>,
       "tensor cores, no float atomics: dQ over 16-row query tiles, dK and dV in fragments over "
       "32-key tiles",
       /*tensor_core=*/true},
      {"decode", Op::attention_decode, true, &decode,
       "split-K over the KV cache (64 keys a block), LSE merge; positions >= lens[b] unread"},
      {"rmsnorm", Op::rmsnorm, true, &rmsnorm,
       "one block per row, warp-shuffle sum of squares, 1/sqrt correctly rounded"},
      {"swiglu", Op::mlp_swiglu, true, &swiglu,
       "16x16 tiled GEMMs, silu(x W1) * (x W3) fused into the first, h in f32"},
  };
  for (const Entry& e : entries) {
    const std::string onf = e.onf, name = backend + "." + onf;
    const LaunchFn launch = e.launch;
    const std::vector<Format> formats = e.tensor_core ? std::vector{Format::bf16, Format::f16}
                                                      : std::vector{Format::f32, Format::bf16};
    Variant v{
        .name = name,
        .op = e.op,
        .backend = backend,
        .formats = formats,
        .accepts_strided = !e.tensor_core,
        .deterministic = e.deterministic,
        .summary = e.summary,
        .cost = [onf](const Problem& p) { return cuda_cost::total(onf, p); },
        .run =
            [onf, name, formats, launch, before = hooks.before_run, after = hooks.after_run](
                const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
                const RunOptions& opt) {
              check_tensors(p, in, out);
              check_supported(name, formats, p);
              if (before) before(opt);
              run_on_device(name, p, in, out, launch);
              if (after) after(onf, p, in);
            },
        .tiles =
            [&] {
              std::vector<moa::extent_t> t;
              for (long long x : cuda_tiles::tiles_of(onf)) t.push_back(moa::extent_t(x));
              return t;
            }(),
        .envelope = compiled_envelope(e.op),
        // o and lse are <backend>.flash's bit for bit (one forward_pass), a
        // tensor-core ONF's <backend>.flash_tc's (its launcher)
        .family_name = e.op != Op::attention_fwdbwd ? std::string()
                       : e.tensor_core              ? backend + ".flash_tc"
                                                    : backend + ".flash",
        .same_bits_any_layout = true,
        .where = where,
        .instrumentation = hooks.instrumentation,
        .time_on_device =
            [name, formats, launch, before = hooks.before_run, timer = hooks.timer](
                const Problem& p, std::span<const TensorRef> in, std::span<const TensorRef> out,
                const DeviceTimingOptions& opt) {
              check_tensors(p, in, out);
              check_supported(name, formats, p);
              if (before) before(RunOptions{});
              return time_on_device(name, p, in, out, launch, timer, opt);
            },
    };
    // certify draws inside the envelope (docs/design.md#envelope) and bounds
    // the arithmetic declared here (docs/bounds.md#tensor-cores): mma
    // accumulation, P rounded to storage (bf16 or f16) as the A operand of
    // P V (P^T dO in a backward), and a backward's dS rounded to storage as
    // that of dS^T Q and
    // dS K. Assigned, not designated: nvcc's front end crashes on it inside
    // Variant's initialiser.
    if (hooks.token_reach > 0) {
      AxisEnvelope within;
      within.hi = hooks.token_reach;
      for (std::string_view axis : dims_of(e.op))
        if (axis == "T") v.reach.axes.emplace_back(std::string(axis), within);
      v.reach_why = hooks.token_reach_why;
    }
    if (e.tensor_core) {
      v.envelope = tensor_core_envelope();
      v.arithmetic.accumulation = Accumulation::tensor_core;
      v.arithmetic.rounded["P"] = Rounding::storage;
      if (e.op != Op::attention_fwd) v.arithmetic.rounded["dS"] = Rounding::storage;
    }
    r.add(std::move(v));
  }
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
