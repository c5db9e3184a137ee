// The one shared-memory segment a call's tensors cross in
// (docs/worker-protocol.md, "A call"): a memfd kept across calls while
// they fit, its layout, and the checks moacert makes after the worker's
// answer (canaries around outputs, inputs unchanged).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "reference/tensor.hpp"

namespace moacert::kernels::worker {

// Bytes of canary on each side of an output, and the alignment of every
// tensor's first element.
inline constexpr std::size_t kCanaryBytes = 64;
inline constexpr std::size_t kAlignment = 64;

// Where one tensor lies in the segment: its storage (cosize elements) from
// `offset`.
struct Placement {
  std::string name;  // the op's name of the tensor
  bool output = false;
  std::size_t offset = 0, bytes = 0;
};

// The inputs then the outputs, each aligned, each output between canaries.
// `total` is the segment size they need.
std::vector<Placement> lay_out(std::span<const TensorRef> inputs,
                               std::span<const TensorRef> outputs,
                               const std::vector<std::string>& names, std::size_t& total);

class Segment {
 public:
  Segment() = default;
  ~Segment();
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  // Makes the segment at least `bytes` long; true when that took a new
  // memfd, whose descriptor the next call must pass (its id is new).
  bool reserve(std::size_t bytes);
  int fd() const { return fd_; }
  std::uint64_t id() const { return id_; }
  std::size_t size() const { return size_; }

  // Copies each input in, fills each output with all-ones bytes (NaN in
  // every float format) and its slack with canary bytes.
  void prepare(const std::vector<Placement>& places, std::span<const TensorRef> inputs);
  // What the worker broke, in one phrase ("wrote 4 bytes past o",
  // "changed input q at byte 12 of its storage"), or "".
  std::string damage(const std::vector<Placement>& places, std::span<const TensorRef> inputs) const;
  // Copies each output out.
  void read_outputs(const std::vector<Placement>& places, std::span<const TensorRef> outputs) const;

 private:
  void release();
  int fd_ = -1;
  std::uint64_t id_ = 0;
  std::size_t size_ = 0;
  unsigned char* map_ = nullptr;
};

}  // namespace moacert::kernels::worker
