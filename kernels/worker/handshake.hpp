// The handshake of docs/worker-protocol.md: the kernels a worker declares,
// read and checked before any case is run.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/envelope.hpp"
#include "reference/arithmetic.hpp"
#include "reference/conventions.hpp"
#include "reference/problem.hpp"

namespace moacert::kernels::worker {

// The protocol this moacert speaks; a worker's handshake names the same.
inline constexpr const char* kProtocol = "moacert-worker/1";

// A worker moacert refuses to use (no handshake, another protocol, an
// unknown op or format, a malformed envelope, ...): bad input, exit 2, one
// line naming the worker's command and the field.
class WorkerError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// One kernel as the worker declares it.
struct DeclaredKernel {
  Op op;
  std::string name;
  std::vector<Format> formats;  // ascending
  Envelope envelope;            // checked against `op` (Envelope::check)
  bool accepts_strided = false;
  Arithmetic arithmetic;  // as declared (docs/design.md#arithmetic)
  // "outputs", "causal_alignment", "params" as declared (docs/design.md#conventions)
  Conventions conventions;
  // "deterministic": true claims bitwise the same outputs on every run and
  // thread count (checked); false, the spread across thread counts is
  // reported.
  bool deterministic = false;
  friend bool operator==(const DeclaredKernel&, const DeclaredKernel&) = default;
};

// The kernels of a handshake record. Throws WorkerError, its message
// starting with `who` ("worker python3 w.py"), naming the first field that
// is wrong.
std::vector<DeclaredKernel> parse_handshake(const std::string& record, const std::string& who);

}  // namespace moacert::kernels::worker
