#include "kernels/worker/segment.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace moacert::kernels::worker {

namespace {

std::size_t aligned(std::size_t x) {
  return (x + kAlignment - 1) / kAlignment * kAlignment;
}

std::size_t storage_bytes(const TensorRef& t) {
  return std::size_t(t.layout.cosize()) * std::size_t(dtype_bytes(t.dtype));
}

// A canary byte that depends on its position, so that a shifted copy of
// the canary is still caught.
std::uint8_t canary(std::size_t i) {
  return std::uint8_t(0xA5 ^ ((i * 0x3B) & 0xff));
}

}  // namespace

std::vector<Placement> lay_out(std::span<const TensorRef> inputs,
                               std::span<const TensorRef> outputs,
                               const std::vector<std::string>& names, std::size_t& total) {
  std::vector<Placement> places;
  total = 0;
  for (std::size_t i = 0; i < inputs.size() + outputs.size(); ++i) {
    const bool output = i >= inputs.size();
    const TensorRef& t = output ? outputs[i - inputs.size()] : inputs[i];
    Placement p{names.at(i), output, 0, storage_bytes(t)};
    if (output) total += kCanaryBytes;
    p.offset = total;
    total = aligned(total + p.bytes);
    if (output) total += kCanaryBytes;
    places.push_back(std::move(p));
  }
  total = std::max<std::size_t>(total, kAlignment);
  return places;
}

Segment::~Segment() {
  release();
}

void Segment::release() {
  if (map_) munmap(map_, size_);
  if (fd_ >= 0) close(fd_);
  map_ = nullptr;
  fd_ = -1;
  size_ = 0;
}

bool Segment::reserve(std::size_t bytes) {
  if (fd_ >= 0 && bytes <= size_) return false;
  release();
  // Room to grow by half again, so that a run of growing cases maps a few
  // segments, not one per case.
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  const std::size_t size = (bytes + bytes / 2 + page - 1) / page * page;
  fd_ = memfd_create("moacert-worker-tensors", MFD_CLOEXEC);
  if (fd_ < 0)
    throw std::runtime_error(std::string("worker: memfd_create: ") + std::strerror(errno));
  if (ftruncate(fd_, off_t(size)) != 0) {
    const int e = errno;
    release();
    throw std::runtime_error(std::string("worker: cannot size the tensors: ") + std::strerror(e));
  }
  void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (m == MAP_FAILED) {
    const int e = errno;
    release();
    throw std::runtime_error(std::string("worker: cannot map the tensors: ") + std::strerror(e));
  }
  map_ = static_cast<unsigned char*>(m);
  size_ = size;
  ++id_;
  return true;
}

void Segment::prepare(const std::vector<Placement>& places, std::span<const TensorRef> inputs) {
  for (std::size_t i = 0; i < places.size(); ++i) {
    const Placement& p = places[i];
    unsigned char* at = map_ + p.offset;
    if (!p.output) {
      std::memcpy(at, inputs[i].data, p.bytes);
      continue;
    }
    for (std::size_t k = p.offset - kCanaryBytes; k < p.offset; ++k) map_[k] = canary(k);
    std::memset(at, 0xff, p.bytes);
    const std::size_t end = aligned(p.offset + p.bytes) + kCanaryBytes;
    for (std::size_t k = p.offset + p.bytes; k < end; ++k) map_[k] = canary(k);
  }
}

std::string Segment::damage(const std::vector<Placement>& places,
                            std::span<const TensorRef> inputs) const {
  for (std::size_t i = 0; i < places.size(); ++i) {
    const Placement& p = places[i];
    const unsigned char* at = map_ + p.offset;
    if (!p.output) {
      if (std::memcmp(at, inputs[i].data, p.bytes) == 0) continue;
      const auto* was = static_cast<const unsigned char*>(inputs[i].data);
      std::size_t k = 0;
      while (at[k] == was[k]) ++k;
      return "changed input " + p.name + " at byte " + std::to_string(k) + " of its storage";
    }
    for (std::size_t k = p.offset - kCanaryBytes; k < p.offset; ++k)
      if (map_[k] != canary(k))
        return "wrote " + std::to_string(p.offset - k) + " bytes before " + p.name;
    const std::size_t end = aligned(p.offset + p.bytes) + kCanaryBytes;
    for (std::size_t k = end; k > p.offset + p.bytes; --k)
      if (map_[k - 1] != canary(k - 1))
        return "wrote " + std::to_string(k - p.offset - p.bytes) + " bytes past " + p.name;
  }
  return {};
}

void Segment::read_outputs(const std::vector<Placement>& places,
                           std::span<const TensorRef> outputs) const {
  const std::size_t n_inputs = places.size() - outputs.size();
  for (std::size_t i = n_inputs; i < places.size(); ++i)
    std::memcpy(outputs[i - n_inputs].data, map_ + places[i].offset, places[i].bytes);
}

}  // namespace moacert::kernels::worker
