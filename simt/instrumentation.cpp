// The entry points GCC's -fsanitize=thread instrumentation calls (the
// compile step only: moacert-simt-c++ never links libtsan). Each forwards
// the address, size and kind of one load or store, with its return address
// as the source location, to the emulator's checker; outside a launch they
// return at once. The list is what `nm -u` shows for GCC 12's
// instrumentation of kernels (docs/simt.md#instrumentation); the atomic
// family serves std::atomic in kernel code, which the emulator treats as
// atomic accesses.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "simt/shadow_check.hpp"

using moacert::simt::detail::Access;
using moacert::simt::detail::fast_access;
using moacert::simt::detail::on_access;
using moacert::simt::detail::on_aligned_access;

#define MOACERT_PC __builtin_return_address(0)

extern "C" {

void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

#define MOACERT_TSAN_ACCESS(n)                           \
  void __tsan_read##n(void* a) {                         \
    fast_access<n, Access::read, true>(a, MOACERT_PC);   \
  }                                                      \
  void __tsan_write##n(void* a) {                        \
    fast_access<n, Access::write, true>(a, MOACERT_PC);  \
  }                                                      \
  void __tsan_unaligned_read##n(void* a) {               \
    fast_access<n, Access::read, false>(a, MOACERT_PC);  \
  }                                                      \
  void __tsan_unaligned_write##n(void* a) {              \
    fast_access<n, Access::write, false>(a, MOACERT_PC); \
  }                                                      \
  void __tsan_read##n##_pc(void* a, void* pc) {          \
    fast_access<n, Access::read, true>(a, pc);           \
  }                                                      \
  void __tsan_write##n##_pc(void* a, void* pc) {         \
    fast_access<n, Access::write, true>(a, pc);          \
  }
// The aligned forms (the compiler knows the access aligned to its size)
// have their alignment checked; a byte is always aligned. The common
// accesses are judged inline (simt/shadow_check.hpp), the rest by on_access.
MOACERT_TSAN_ACCESS(1)
MOACERT_TSAN_ACCESS(2)
MOACERT_TSAN_ACCESS(4)
MOACERT_TSAN_ACCESS(8)
MOACERT_TSAN_ACCESS(16)
#undef MOACERT_TSAN_ACCESS

void __tsan_read_range(void* a, unsigned long n) {
  if (n) on_access(a, n, Access::read, MOACERT_PC);
}
void __tsan_write_range(void* a, unsigned long n) {
  if (n) on_access(a, n, Access::write, MOACERT_PC);
}

// std::atomic and __atomic builtins in kernel code: an atomic access of the
// object, then the operation itself (fibers share one OS thread).
#define MOACERT_TSAN_ATOMIC(bits, T)                                                               \
  T __tsan_atomic##bits##_load(const volatile T* a, int) {                                         \
    on_access(const_cast<T*>(a), sizeof(T), Access::atomic, MOACERT_PC);                           \
    return *a;                                                                                     \
  }                                                                                                \
  void __tsan_atomic##bits##_store(volatile T* a, T v, int) {                                      \
    on_access(const_cast<T*>(a), sizeof(T), Access::atomic, MOACERT_PC);                           \
    *a = v;                                                                                        \
  }                                                                                                \
  T __tsan_atomic##bits##_exchange(volatile T* a, T v, int) {                                      \
    on_access(const_cast<T*>(a), sizeof(T), Access::atomic, MOACERT_PC);                           \
    const T old = *a;                                                                              \
    *a = v;                                                                                        \
    return old;                                                                                    \
  }                                                                                                \
  T __tsan_atomic##bits##_fetch_add(volatile T* a, T v, int) {                                     \
    on_access(const_cast<T*>(a), sizeof(T), Access::atomic, MOACERT_PC);                           \
    const T old = *a;                                                                              \
    *a = T(old + v);                                                                               \
    return old;                                                                                    \
  }                                                                                                \
  T __tsan_atomic##bits##_fetch_sub(volatile T* a, T v, int) {                                     \
    on_access(const_cast<T*>(a), sizeof(T), Access::atomic, MOACERT_PC);                           \
    const T old = *a;                                                                              \
    *a = T(old - v);                                                                               \
    return old;                                                                                    \
  }                                                                                                \
  T __tsan_atomic##bits##_fetch_and(volatile T* a, T v, int) {                                     \
    on_access(const_cast<T*>(a), sizeof(T), Access::atomic, MOACERT_PC);                           \
    const T old = *a;                                                                              \
    *a = T(old & v);                                                                               \
    return old;                                                                                    \
  }                                                                                                \
  T __tsan_atomic##bits##_fetch_or(volatile T* a, T v, int) {                                      \
    on_access(const_cast<T*>(a), sizeof(T), Access::atomic, MOACERT_PC);                           \
    const T old = *a;                                                                              \
    *a = T(old | v);                                                                               \
    return old;                                                                                    \
  }                                                                                                \
  T __tsan_atomic##bits##_fetch_xor(volatile T* a, T v, int) {                                     \
    on_access(const_cast<T*>(a), sizeof(T), Access::atomic, MOACERT_PC);                           \
    const T old = *a;                                                                              \
    *a = T(old ^ v);                                                                               \
    return old;                                                                                    \
  }                                                                                                \
  int __tsan_atomic##bits##_compare_exchange_strong(volatile T* a, T* expected, T v, int, int) {   \
    on_access(const_cast<T*>(a), sizeof(T), Access::atomic, MOACERT_PC);                           \
    if (*a == *expected) {                                                                         \
      *a = v;                                                                                      \
      return 1;                                                                                    \
    }                                                                                              \
    *expected = *a;                                                                                \
    return 0;                                                                                      \
  }                                                                                                \
  int __tsan_atomic##bits##_compare_exchange_weak(volatile T* a, T* expected, T v, int s, int f) { \
    return __tsan_atomic##bits##_compare_exchange_strong(a, expected, v, s, f);                    \
  }                                                                                                \
  T __tsan_atomic##bits##_compare_exchange_val(volatile T* a, T expected, T v, int, int) {         \
    on_access(const_cast<T*>(a), sizeof(T), Access::atomic, MOACERT_PC);                           \
    const T old = *a;                                                                              \
    if (old == expected) *a = v;                                                                   \
    return old;                                                                                    \
  }
MOACERT_TSAN_ATOMIC(8, std::uint8_t)
MOACERT_TSAN_ATOMIC(16, std::uint16_t)
MOACERT_TSAN_ATOMIC(32, std::uint32_t)
MOACERT_TSAN_ATOMIC(64, std::uint64_t)
#undef MOACERT_TSAN_ATOMIC

void __tsan_atomic_thread_fence(int) {}
void __tsan_atomic_signal_fence(int) {}

}  // extern "C"
