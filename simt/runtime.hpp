// What the load/store callbacks the compiler inserts (instrumentation.cpp)
// see of the emulator: the access check (access.cpp) and the running fiber.
// The rest of the emulator's state is simt/state.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#define MOACERT_SIMT_UNINSTRUMENTED 1
#include "include/moacert/simt.h"

namespace moacert::simt::detail {

enum class Access : std::uint8_t { read, write, atomic };

// Checks and counts one access by the current fiber; a no-op outside a
// launch, and for the fiber's own stack. `pc` is the instrumented code's
// return address, symbolised only if a hazard is reported.
void on_access(const void* address, std::size_t bytes, Access kind, const void* pc);
// The same for an access the compiler knows aligned to its size (a
// `float4` load): at an address that is not, a GPU faults (`misaligned
// address`), and so does the emulator.
void on_aligned_access(const void* address, std::size_t bytes, Access kind, const void* pc);

// The fiber running now on this OS thread (null outside a launch): the
// callbacks' fast path reads it first. constinit, so that a file other than
// its definition's (launch.cpp) reads it directly, without a TLS wrapper.
struct Fiber;
extern thread_local constinit Fiber* tls_current __attribute__((tls_model("initial-exec")));

}  // namespace moacert::simt::detail
