// What a variant's registry entry says of its tiles (Variant::tiles): the
// tile extents its loop nest runs on this machine, for every format it
// supports. Each tiled CPU kernel's header exposes `<onf>_tiles(Format)`, the
// extents it runs in that format on Highway's dispatched target (the kernel
// body reads the same definition); the registry entry is their union.
#pragma once

#include <algorithm>
#include <vector>

#include "reference/format.hpp"
#include "reference/moa/moa.hpp"

namespace moacert::kernels::cpu {

using TilesFn = std::vector<moa::extent_t> (*)(Format);

// The sorted union of tiles(f) over `formats`, each extent once.
inline std::vector<moa::extent_t> tiles_of_formats(const std::vector<Format>& formats,
                                                   TilesFn tiles) {
  std::vector<moa::extent_t> out;
  for (Format f : formats) {
    const std::vector<moa::extent_t> t = tiles(f);
    out.insert(out.end(), t.begin(), t.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace moacert::kernels::cpu
