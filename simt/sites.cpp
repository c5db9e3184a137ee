// Sites: the source locations of emulator calls (interned) and of
// instrumented accesses (return addresses, symbolised with GCC's
// libbacktrace when a hazard is reported).
#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "simt/state.hpp"

#if MOACERT_SIMT_HAVE_BACKTRACE
#include <backtrace.h>  // GCC's libbacktrace: file:line from the DWARF of -g
#endif

namespace moacert::simt::detail {

// A direct-mapped cache in front of the map: a launch interns the same few
// sites (its barriers, shuffles, mma, ldmatrix, cp.async) at every call.
std::uint64_t intern(Site s) {
  Runtime::SiteSlot& slot =
      runtime.site_cache[(reinterpret_cast<std::uintptr_t>(s.file) >> 4 ^ s.line * 0x9e3779b1u) %
                         Runtime::kSiteCache];
  if (slot.where && slot.file == s.file && slot.line == s.line) return slot.where;
  auto [it, fresh] =
      runtime.site_index.emplace(std::make_pair(s.file, s.line), runtime.sites.size());
  if (fresh) runtime.sites.push_back(s);
  slot = {s.file, s.line, it->second | kSiteTag};
  return slot.where;
}
std::string describe_where(std::uint64_t w) {
  if (w & kSiteTag) {
    const Site& s = runtime.sites[w & ~kSiteTag];
    return std::string(s.file) + ":" + std::to_string(s.line);
  }
  const void* pc = reinterpret_cast<const void*>(w - 1);  // inside the call instruction
#if MOACERT_SIMT_HAVE_BACKTRACE
  static backtrace_state* state = backtrace_create_state(nullptr, 0, nullptr, nullptr);
  std::string file_line;
  // The innermost frame: with inlining, the line of the access itself.
  backtrace_pcinfo(
      state, reinterpret_cast<std::uintptr_t>(pc),
      [](void* data, std::uintptr_t, const char* file, int line, const char*) {
        auto* out = static_cast<std::string*>(data);
        if (file && out->empty()) *out = std::string(file) + ":" + std::to_string(line);
        return 1;
      },
      [](void*, const char*, int) {}, &file_line);
  if (!file_line.empty()) return file_line;
#endif
  Dl_info info{};
  if (dladdr(pc, &info) && info.dli_sname)
    return std::string(info.dli_sname) + "+" +
           std::to_string(reinterpret_cast<std::uintptr_t>(pc) -
                          reinterpret_cast<std::uintptr_t>(info.dli_saddr));
  char buf[32];
  std::snprintf(buf, sizeof buf, "pc %p", pc);
  return buf;
}

Symbol symbol_of(std::uintptr_t a) {
  Symbol found;
#if MOACERT_SIMT_HAVE_BACKTRACE
  static backtrace_state* state = backtrace_create_state(nullptr, 0, nullptr, nullptr);
  backtrace_syminfo(
      state, a,
      [](void* data, std::uintptr_t, const char* name, std::uintptr_t value, std::uintptr_t size) {
        if (name) *static_cast<Symbol*>(data) = {name, value, size};
      },
      [](void*, const char*, int) {}, &found);
#else
  (void)a;
#endif
  // As the source names it: a static local's or an unnamed namespace's
  // variable by its own name (the message's kernel and line say where).
  int status = 0;
  if (char* d = abi::__cxa_demangle(found.name.c_str(), nullptr, nullptr, &status)) {
    found.name = d;
    std::free(d);
    if (const std::size_t colons = found.name.rfind("::"); colons != std::string::npos)
      found.name = found.name.substr(colons + 2);
  }
  return found;
}

}  // namespace moacert::simt::detail
