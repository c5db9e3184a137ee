// Tensors by name. An op's signature (reference/ops.hpp) names each input
// and output; code that reads one tensor of a call reaches it by that name,
// `in["do"]`, never by its position, so that a reader sees which tensor is
// meant and a signature that gains a tensor moves no index. A lookup is a
// scan of at most a dozen names, made where a call's tensors are unpacked,
// never inside an element loop.
#pragma once

#include <cstddef>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "reference/ops.hpp"

namespace moacert {

// The position of the tensor `name` among `names` (an op's inputs or
// outputs); a name the signature lacks is a programming error.
inline std::size_t position_of(const OpInfo& op, const std::vector<std::string_view>& names,
                               std::string_view name) {
  for (std::size_t k = 0; k < names.size(); ++k)
    if (names[k] == name) return k;
  throw std::logic_error(std::string(op.name) + " has no tensor named " + std::string(name));
}
inline std::size_t input_position(Op op, std::string_view name) {
  return position_of(info(op), info(op).inputs, name);
}
inline std::size_t output_position(Op op, std::string_view name) {
  return position_of(info(op), info(op).outputs, name);
}

// A call's inputs (or outputs), in the signature's order, reached by name.
// It views the caller's sequence, which must outlive it and hold one item
// per tensor of the signature.
template <class T>
class ByName {
 public:
  ByName(const OpInfo& op, const std::vector<std::string_view>& names, std::span<T> items)
      : op_(&op), names_(&names), items_(items) {
    if (items.size() != names.size())
      throw std::logic_error(std::string(op.name) + ": " + std::to_string(items.size()) +
                             " tensors where the signature has " + std::to_string(names.size()));
  }

  T& operator[](std::string_view name) const { return items_[position_of(*op_, *names_, name)]; }
  bool has(std::string_view name) const {
    for (std::string_view n : *names_)
      if (n == name) return true;
    return false;
  }
  std::span<T> all() const { return items_; }

 private:
  const OpInfo* op_;
  const std::vector<std::string_view>* names_;
  std::span<T> items_;
};

// The inputs and outputs of a call of `op` by name: `inputs_by_name(op,
// c.inputs)["q"]`. Works on any contiguous sequence (a vector, an array, a
// span), const or not.
template <class Sequence>
using ItemOf = std::remove_reference_t<decltype(*std::data(std::declval<Sequence&>()))>;

template <class Sequence>
ByName<ItemOf<Sequence>> inputs_by_name(Op op, Sequence& items) {
  return {info(op), info(op).inputs,
          std::span<ItemOf<Sequence>>(std::data(items), std::size(items))};
}
template <class Sequence>
ByName<ItemOf<Sequence>> outputs_by_name(Op op, Sequence& items) {
  return {info(op), info(op).outputs,
          std::span<ItemOf<Sequence>>(std::data(items), std::size(items))};
}

}  // namespace moacert
