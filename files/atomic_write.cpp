#include "files/atomic_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace moacert::files {

namespace {

bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t w = ::write(fd, text.data(), text.size());
    if (w <= 0) return false;
    text.remove_prefix(static_cast<std::size_t>(w));
  }
  return true;
}

// The test hook of atomic_write.hpp.
void stop_if_asked(const std::filesystem::path& path) {
  const char* name = std::getenv("MOACERT_STOP_BEFORE_RENAME");
  if (name != nullptr && path.filename() == name) std::raise(SIGSTOP);
}

}  // namespace

void write_atomically(const std::filesystem::path& path, std::string_view text) {
  // Hidden and named after the target, so that a temporary left by a killed
  // run says whose it was and never matches a reader's glob of results.
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  std::string name = path.filename().string();
  name.insert(name.begin(), '.');
  std::string tmp = (folder / (name + ".tmp.XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw std::runtime_error(path.string() + ": cannot create a file next to it");
  ::fchmod(fd, 0644);  // mkstemp makes it 0600; results are no secret
  bool ok = write_all(fd, text);
  ok = ::fsync(fd) == 0 && ok;  // the data reaches the disk before the name does
  ok = ::close(fd) == 0 && ok;
  if (ok) stop_if_asked(path);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path.string() + ": cannot write");
  }
}

}  // namespace moacert::files
