// The loaded modules, from their program headers (dl_iterate_phdr): their
// segments (a kernel's static data) and the TLS block of a kernel's module,
// which is its static shared memory.
#include <link.h>

#include <algorithm>

#include "simt/state.hpp"

namespace moacert::simt::detail {

void gather_segments() {
  runtime.segments.clear();
  runtime.relro.clear();
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void*) {
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD)
            runtime.segments.push_back({lo, lo + ph.p_memsz, (ph.p_flags & PF_W) != 0});
          else if (ph.p_type == PT_GNU_RELRO)  // read-only once relocated
            runtime.relro.push_back({lo, lo + ph.p_memsz, false});
        }
        return 0;
      },
      nullptr);
  std::sort(runtime.segments.begin(), runtime.segments.end(),
            [](const Segment& x, const Segment& y) { return x.lo < y.lo; });
}

namespace {

struct ModuleTls {
  std::uintptr_t kernel;
  std::uintptr_t lo = 0, hi = 0;
};
int find_tls(dl_phdr_info* info, std::size_t, void* data) {
  auto* m = static_cast<ModuleTls*>(data);
  bool holds_kernel = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && m->kernel >= lo && m->kernel < lo + ph.p_memsz) holds_kernel = true;
  }
  if (!holds_kernel) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_TLS && info->dlpi_tls_data) {
      m->lo = reinterpret_cast<std::uintptr_t>(info->dlpi_tls_data);
      m->hi = m->lo + info->dlpi_phdr[i].p_memsz;
    }
  return 1;
}

}  // namespace

std::pair<std::uintptr_t, std::uintptr_t> static_shared_of(const void* kernel) {
  ModuleTls m{reinterpret_cast<std::uintptr_t>(kernel)};
  dl_iterate_phdr(find_tls, &m);
  return {m.lo, m.hi};
}

}  // namespace moacert::simt::detail
