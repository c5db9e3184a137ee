// The static __shared__ variables of a kernel's module, each with its own
// extent (docs/simt.md#shared-memory): on the host a __shared__ variable is
// a thread_local, so the module's TLS block holds them all, and its symbol
// table (STT_TLS symbols: an offset in the TLS block and a size) says
// where each begins and ends. An access to static shared memory must lie
// inside one variable; bytes of the block in no variable (alignment, and
// the red zone moacert's builds leave after each, simt/as.in) are out of
// bounds, named after the nearest variable.
#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "simt/state.hpp"

namespace moacert::simt::detail {

namespace {

struct TlsSymbol {
  std::uint64_t offset, size;
  std::string name;
};

// The variable's own name: the demangled symbol's last component
// ("(anonymous namespace)::kernel(float const*)::partial" is "partial").
std::string short_name(const char* mangled) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  const std::size_t colons = name.rfind("::");
  return colons == std::string::npos ? name : name.substr(colons + 2);
}

// The STT_TLS symbols of the ELF file at `path` (its .symtab, else its
// .dynsym), sorted by offset; none where it cannot be read (a stripped
// module keeps its TLS block checked as a whole).
std::vector<TlsSymbol> read_tls_symbols(const std::string& path) {
  std::vector<TlsSymbol> out;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st {};
  void* map = fstat(fd, &st) == 0 && st.st_size > 0
                  ? mmap(nullptr, std::size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0)
                  : MAP_FAILED;
  close(fd);
  if (map == MAP_FAILED) return out;
  const auto* base = static_cast<const unsigned char*>(map);
  const std::size_t bytes = std::size_t(st.st_size);
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  const bool elf64 = bytes >= sizeof(Elf64_Ehdr) &&
                     std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 &&
                     eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_shentsize == sizeof(Elf64_Shdr) &&
                     eh->e_shoff + std::size_t(eh->e_shnum) * sizeof(Elf64_Shdr) <= bytes;
  if (elf64) {
    const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
    for (std::uint32_t wanted : {std::uint32_t(SHT_SYMTAB), std::uint32_t(SHT_DYNSYM)}) {
      for (int i = 0; i < eh->e_shnum && out.empty(); ++i) {
        if (sh[i].sh_type != wanted || sh[i].sh_link >= eh->e_shnum) continue;
        const Elf64_Shdr& strtab = sh[sh[i].sh_link];
        if (sh[i].sh_offset + sh[i].sh_size > bytes || strtab.sh_offset + strtab.sh_size > bytes)
          continue;
        const auto* sym = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
        const auto* names = reinterpret_cast<const char*>(base + strtab.sh_offset);
        for (std::size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k)
          if (ELF64_ST_TYPE(sym[k].st_info) == STT_TLS && sym[k].st_size > 0 &&
              sym[k].st_name < strtab.sh_size)
            out.push_back({sym[k].st_value, sym[k].st_size, short_name(names + sym[k].st_name)});
      }
      if (!out.empty()) break;
    }
  }
  munmap(map, bytes);
  std::sort(out.begin(), out.end(),
            [](const TlsSymbol& x, const TlsSymbol& y) { return x.offset < y.offset; });
  // A symbol twice (.symtab may list an alias): once.
  out.erase(std::unique(out.begin(), out.end(),
                        [](const TlsSymbol& x, const TlsSymbol& y) {
                          return x.offset == y.offset && x.size == y.size;
                        }),
            out.end());
  return out;
}

// The path of the loaded module that holds `kernel` ("" for none).
std::string module_path_of(const void* kernel) {
  struct Found {
    std::uintptr_t kernel;
    std::string path;
  } found{reinterpret_cast<std::uintptr_t>(kernel), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* f = static_cast<Found*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          const std::uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && f->kernel >= lo && f->kernel < lo + ph.p_memsz) {
            f->path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
            return 1;
          }
        }
        return 0;
      },
      &found);
  return found.path;
}

}  // namespace

void find_shared_variables(Launch& L, const void* kernel) {
  L.shared_variables.clear();
  if (L.shared_hi <= L.shared_lo) return;
  // A module's symbols never change while it is loaded: read once each.
  static std::map<std::string, std::vector<TlsSymbol>> cache;
  const std::string path = module_path_of(kernel);
  if (path.empty()) return;
  auto it = cache.find(path);
  if (it == cache.end()) it = cache.emplace(path, read_tls_symbols(path)).first;
  for (const TlsSymbol& s : it->second) {
    const std::uintptr_t lo = L.shared_lo + s.offset, hi = lo + s.size;
    if (hi > L.shared_hi) continue;
    // The dynamic arena is bounded by the launch's shared_bytes instead.
    if (L.dynamic_lo && lo < L.dynamic_lo + kMaxDynamicShared && hi > L.dynamic_lo) continue;
    L.shared_variables.push_back({lo, hi, s.name});
  }
}

void past_shared_variable(std::uintptr_t a, std::size_t bytes, Access kind, std::uint64_t where) {
  const Launch& L = *runtime.launch;
  const std::vector<SharedVariable>& vars = L.shared_variables;
  // The variable below the access (the access runs past its end), else the
  // one above it (the access lies before its start).
  auto above = std::upper_bound(vars.begin(), vars.end(), a,
                                [](std::uintptr_t x, const SharedVariable& v) { return x < v.lo; });
  const SharedVariable& v = above == vars.begin() ? *above : *(above - 1);
  const auto first = std::int64_t(a) - std::int64_t(v.lo);
  const std::string size =
      "static shared '" + v.name + "' (" + std::to_string(v.hi - v.lo) + " bytes)";
  const std::string side = a >= v.hi           ? "past the end of " + size
                           : a + bytes <= v.lo ? "before the start of " + size
                                               : "across the end of " + size;
  hazard("out of bounds",
         me_name(*tls_current) + " " +
             (kind == Access::read    ? "reads"
              : kind == Access::write ? "writes"
                                      : "atomically updates") +
             " " + std::to_string(bytes) + " bytes at shared '" + v.name + "'" +
             (first >= 0 ? "+" : "") + std::to_string(first) + " (" + describe_where(where) +
             "): " + side + ", its bytes " + std::to_string(first) + ".." +
             std::to_string(first + std::int64_t(bytes) - 1) + ", in no __shared__ variable");
}

}  // namespace moacert::simt::detail
