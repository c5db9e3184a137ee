// What the emulator's race checker holds beside device memory itself: a
// shadow of every byte a kernel touches. Stated here, apart from the
// checker's state (state.hpp, which checks the layout against it), so that
// `--max-memory` counts it for an emulated variant (cli/budget.cpp)
// without seeing the emulator.
#pragma once

#include <cstddef>

namespace moacert::simt {

// Bytes of shadow per byte of a registered buffer that a checked access
// touches, allocated whole on its first one: the byte's last writer and
// last two readers (state.hpp, ByteShadow). A decode's K and V at
// L = 131072, 8 KV heads of 128 f32 (1 GiB) would take 80 GiB.
inline constexpr std::size_t kShadowBytesPerByte = 80;

// The most the shadows of freed buffers, kept for the next ones, hold at
// once (buffers.cpp): a shadow larger than this is freed with its buffer.
inline constexpr std::size_t kSpareShadowBytes = std::size_t(256) << 20;

}  // namespace moacert::simt
