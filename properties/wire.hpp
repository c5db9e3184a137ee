// Plain values as bytes, for what one process of a run sends another (the
// ranks of an mpirun, cli/ranks.hpp): the same build on both ends, so there
// is no versioning, and doubles travel as their bits (infinities and NaN
// included, which JSON cannot carry), so that a value read back is the
// value written, bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace moacert::properties {

class WireWriter {
 public:
  template <class T>
  requires std::is_arithmetic_v<T> || std::is_enum_v<T>
  void put(T x) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &x, sizeof(T));
    out_.append(bytes, sizeof(T));
  }
  void put(std::string_view s) {
    put(std::uint64_t(s.size()));
    out_.append(s);
  }
  void put(const std::string& s) { put(std::string_view(s)); }
  void put(const char* s) = delete;  // a literal would be written as a bool

  const std::string& bytes() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// Reads what a WireWriter wrote, in the same order; a short or overlong
// message throws std::runtime_error (a bug, or a rank that died mid-send).
class WireReader {
 public:
  explicit WireReader(std::string_view in) : in_(in) {}
  template <class T>
  requires std::is_arithmetic_v<T> || std::is_enum_v<T> T get() {
    T x;
    std::memcpy(&x, take(sizeof(T)).data(), sizeof(T));
    return x;
  }
  std::string get_string() {
    const auto n = get<std::uint64_t>();
    return std::string(take(n));
  }
  std::size_t remaining() const { return in_.size(); }
  bool done() const { return in_.empty(); }
  void expect_done() const {
    if (!done())
      throw std::runtime_error("wire: " + std::to_string(in_.size()) + " bytes left over");
  }

 private:
  std::string_view take(std::uint64_t n) {
    if (n > in_.size()) throw std::runtime_error("wire: message ends early");
    const std::string_view part = in_.substr(0, n);
    in_.remove_prefix(n);
    return part;
  }
  std::string_view in_;
};

}  // namespace moacert::properties
