// The host side of the CUDA attention ONFs, written once for both backends:
// a registry call copies each tensor's storage to device memory, hands the
// launcher its pointers and strides, and copies the outputs back. Included
// by simt_backend.cpp (the host emulator, variants `simt.<name>`) and by
// cuda_adaptor.cu (the device, `cuda.<name>`), after the CUDA language
// (kernels/cuda/cuda_compat.cuh) and with MOACERT_CUDA_NS naming the
// backend.
#pragma once

#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/attention_args.hpp"
#include "kernels/cuda/cost.hpp"
#include "kernels/registry.hpp"

namespace moacert::kernels::MOACERT_CUDA_NS {

// A launch or memory error: a counterexample with CUDA's own words, never a
// crash of moacert.
inline void check_cuda(cudaError_t e, const std::string& variant, const char* what) {
  if (e != cudaSuccess)
    throw KernelFault(variant + ": " + what + ": " + cudaGetErrorString(e), /*hang=*/false);
}

// One tensor's storage (its layout's cosize) in device memory.
class DeviceTensor {
 public:
  DeviceTensor(const TensorRef& t, const std::string& variant, bool copy_in) : host_(t) {
    bytes_ = static_cast<std::size_t>(t.layout.cosize()) * dtype_bytes(t.dtype);
    check_cuda(cudaMalloc(&data_, bytes_ ? bytes_ : 1), variant, "cudaMalloc");
    if (copy_in && bytes_)
      check_cuda(cudaMemcpy(data_, t.data, bytes_, cudaMemcpyHostToDevice), variant,
                 "cudaMemcpy to the device");
  }
  ~DeviceTensor() { cudaFree(data_); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

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

 private:
  TensorRef host_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// What a problem must be for these kernels; refused before any launch.
inline void check_supported(const std::string& variant, const Problem& p) {
  if (p.format != Format::f32 && p.format != Format::bf16) {
    throw std::invalid_argument(variant + ": format " + std::string(name(p.format)) +
                                " is not compiled (f32 and bf16 storage)");
  }
  if (p.dims.D > cuda_cost::kMaxD) {
    throw std::invalid_argument(variant + ": D = " + std::to_string(p.dims.D) +
                                " exceeds the compiled maximum " +
                                std::to_string(cuda_cost::kMaxD));
  }
  if (p.dims.N > (1 << 24) || p.dims.M > (1 << 24)) {
    throw std::invalid_argument(variant + ": N or M above 2^24 (int indices)");
  }
}

inline AttnDims attn_dims(const Problem& p) {
  const Dims& d = p.dims;
  return {int(d.B), int(d.H), int(d.Hkv),       int(d.N),
          int(d.M), int(d.D), float(p.scale()), p.causal()};
}

inline Storage storage_of(const Problem& p) {
  return p.format == Format::bf16 ? Storage::bf16 : Storage::f32;
}

// Every tensor to the device, the launcher, the outputs back. `launch`
// builds its arguments from the device tensors (inputs, then outputs).
template <class Launch>
void run_on_device(const std::string& variant, const Problem& p, std::span<const TensorRef> inputs,
                   std::span<const TensorRef> outputs, Launch launch) {
  std::vector<std::unique_ptr<DeviceTensor>> in, out;
  for (const TensorRef& t : inputs) in.push_back(std::make_unique<DeviceTensor>(t, variant, true));
  // Outputs too, so that a padded layout's gaps come back as they were.
  for (const TensorRef& t : outputs)
    out.push_back(std::make_unique<DeviceTensor>(t, variant, true));
#if defined(__CUDACC__)
  check_cuda(static_cast<cudaError_t>(launch(p, in, out)), variant, "launch");
#else
  try {
    check_cuda(static_cast<cudaError_t>(launch(p, in, out)), variant, "launch");
  } catch (const ::moacert::simt::Hazard& h) {  // a race, a divergent barrier, out of bounds...
    throw KernelFault(variant + ": " + h.kind() + ": " + h.what(), /*hang=*/h.kind() == "deadlock");
  }
#endif
  check_cuda(cudaDeviceSynchronize(), variant, "kernel");
  for (const auto& t : out) t->copy_out(variant);
}

using Tensors = std::vector<std::unique_ptr<DeviceTensor>>;

inline int launch_fwdbwd(int (*launcher)(const FwdBwdArgs&), const Problem& p, const Tensors& in,
                         const Tensors& out) {
  const FwdBwdArgs args{attn_dims(p), storage_of(p), in[0]->t4(),  in[1]->t4(),
                        in[2]->t4(),  in[3]->t4(),   out[0]->t4(), out[1]->t3(),
                        out[2]->t4(), out[3]->t4(),  out[4]->t4()};
  return launcher(args);
}

inline int launch_bwd(int (*launcher)(const BwdArgs&), const Problem& p, const Tensors& in,
                      const Tensors& out) {
  const BwdArgs args{attn_dims(p), storage_of(p), in[0]->t4(), in[1]->t4(),
                     in[2]->t4(),  in[3]->t4(),   in[4]->t3(), in[5]->t4(),
                     out[0]->t4(), out[1]->t4(),  out[2]->t4()};
  return launcher(args);
}

inline int launch_fwd(int (*launcher)(const FwdArgs&), const Problem& p, const Tensors& in,
                      const Tensors& out) {
  const FwdArgs args{attn_dims(p), storage_of(p), in[0]->t4(), in[1]->t4(),
                     in[2]->t4(),  out[0]->t4(),  out[1]->t3()};
  return launcher(args);
}

// The registry entries of one backend ("simt" or "cuda"): the same ONFs,
// the same cost functions.
inline void register_attention(Registry& r, const std::string& backend, const std::string& where) {
  const std::vector<Format> formats = {Format::f32, Format::bf16};
  struct Entry {
    const char* onf;
    Op op;
    bool deterministic;
    const char* summary;
  };
  const Entry entries[] = {
      {"flash", Op::attention_fwd, true,
       "16x16 tiles, K/V tiles in shared memory, online softmax, fully masked tiles skipped"},
      {"fused_v1", Op::attention_fwdbwd, false,
       "one kernel over query tiles: forward, D_i, dQ in shared memory, dK and dV by atomics"},
      {"fused_v3", Op::attention_fwdbwd, false,
       "fused_v1 with dV by its own kernel over key tiles: only dK by atomics"},
      {"fused_det", Op::attention_fwdbwd, true,
       "no float atomics: dQ over query tiles, dK and dV in registers over key tiles"},
      {"bwd_atomic", Op::attention_bwd, false,
       "three kernels: D = rowsum(dO o O); dV over key tiles; dQ and dK, dK by atomics"},
      {"bwd_fa2", Op::attention_bwd, false,
       "FlashAttention-2's form: dK and dV in registers per key tile, dQ by atomics"},
  };
  for (const Entry& e : entries) {
    const std::string onf = e.onf, name = backend + "." + onf;
    RunFn launch;
    if (onf == "flash") {
      launch = [name](const Problem& p, std::span<const TensorRef> in,
                      std::span<const TensorRef> out, const RunOptions&) {
        run_on_device(name, p, in, out, [](const Problem& q, const Tensors& i, const Tensors& o) {
          return launch_fwd(&launch_flash_fwd, q, i, o);
        });
      };
    } else if (e.op == Op::attention_fwdbwd) {
      int (*launcher)(const FwdBwdArgs&) = onf == "fused_v1"   ? &launch_fused_v1
                                           : onf == "fused_v3" ? &launch_fused_v3
                                                               : &launch_fused_det;
      launch = [name, launcher](const Problem& p, std::span<const TensorRef> in,
                                std::span<const TensorRef> out, const RunOptions&) {
        run_on_device(name, p, in, out,
                      [launcher](const Problem& q, const Tensors& i, const Tensors& o) {
                        return launch_fwdbwd(launcher, q, i, o);
                      });
      };
    } else {
      int (*launcher)(const BwdArgs&) = onf == "bwd_atomic" ? &launch_bwd_atomic : &launch_bwd_fa2;
      launch = [name, launcher](const Problem& p, std::span<const TensorRef> in,
                                std::span<const TensorRef> out, const RunOptions&) {
        run_on_device(name, p, in, out,
                      [launcher](const Problem& q, const Tensors& i, const Tensors& o) {
                        return launch_bwd(launcher, q, i, o);
                      });
      };
    }
    Variant v{
        .name = name,
        .op = e.op,
        .backend = backend,
        .formats = formats,
        .accepts_strided = true,
        .deterministic = e.deterministic,
        .summary = std::string(e.summary) + " (" + where + ")",
        .cost = [onf](const Problem& p) { return cuda_cost::total(onf, p); },
        .run =
            [name, launch](const Problem& p, std::span<const TensorRef> in,
                           std::span<const TensorRef> out, const RunOptions& opt) {
              check_tensors(p, in, out);
              check_supported(name, p);
              launch(p, in, out, opt);
            },
        .tiles = {cuda_cost::kBlockM},
        // o and lse are <backend>.flash's bit for bit (one forward_pass)
        .family_name = e.op == Op::attention_fwdbwd ? backend + ".flash" : std::string(),
    };
    r.add(std::move(v));
  }
}

}  // namespace moacert::kernels::MOACERT_CUDA_NS
