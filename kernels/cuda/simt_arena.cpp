// The dynamic shared arena of the emulated CUDA kernels (`extern __shared__
// float smem[]`, attention_common.cuh), as moacert-simt-c++ defines it for a
// plugin (docs/simt.md#building): a TLS array of the emulator's largest
// dynamic shared size, which the runtime finds through
// moacert_simt_dynamic_shared_. Not instrumented, no CUDA. It lives in the
// kernels' own module, libmoacert_cuda_simt.so, whose TLS block is the
// kernels' shared memory and nothing else. Hidden, so that the module
// neither exports it nor binds to another's: two emulated modules (the
// kernels and a planted build of one of them, tests/cuda/) each keep their
// own arena, where a default-visibility symbol would be interposed and one
// module's kernels would run in the other's TLS block.
alignas(16)
    __attribute__((weak, visibility("hidden"))) thread_local float smem[227 * 1024 / sizeof(float)];

extern "C" __attribute__((weak, visibility("hidden"))) void* moacert_simt_dynamic_shared_() {
  return smem;
}
