#include "kernels/registry.hpp"

#include <algorithm>
#include <stdexcept>

namespace moacert::kernels {

bool Variant::supports(Format f) const {
  return std::find(formats.begin(), formats.end(), f) != formats.end();
}

void Registry::add(Variant v) {
  if (find(v.op, v.name)) {
    throw std::logic_error("variant " + v.name + " of " + std::string(info(v.op).name) +
                           " is registered twice");
  }
  variants_.push_back(std::move(v));
}

const Variant* Registry::find(Op op, std::string_view name) const {
  for (const Variant& v : variants_)
    if (v.op == op && v.name == name) return &v;
  return nullptr;
}

const Variant* Registry::find_family(Op op, std::string_view family) const {
  for (const Variant& v : variants_)
    if (v.op == op && v.family() == family) return &v;
  return nullptr;
}

const Variant* Registry::find_role(Op op, Role role) const {
  for (const Variant& v : variants_)
    if (v.op == op && v.role == role) return &v;
  return nullptr;
}

std::string_view name(Role r) {
  switch (r) {
    case Role::dnf:
      return "dnf";
    case Role::onf:
      return "onf";
    case Role::torch:
      return "torch";
    case Role::plugin:
      return "plugin";
  }
  return "?";
}

std::vector<const Variant*> Registry::of(Op op) const {
  std::vector<const Variant*> out;
  for (const Variant& v : variants_)
    if (v.op == op) out.push_back(&v);
  return out;
}

const Registry& Registry::builtin() {
  static const Registry registry = [] {
    Registry r;
    register_cpu_kernels(r);
#if MOACERT_HAVE_TORCH_FLAG
    register_torch_kernels(r);
#endif
#if MOACERT_HAVE_SIMT_FLAG
    register_simt_kernels(r);
#endif
#if MOACERT_HAVE_CUDA_FLAG
    register_cuda_kernels(r);
#endif
    return r;
  }();
  return registry;
}

std::string cannot_run(const Variant& v) {
#if MOACERT_HAVE_SIMT_FLAG
  if (v.backend == "simt") return simt_settings_error();
#endif
  (void)v;
  return {};
}

Backends backends() {
  return {MOACERT_HAVE_TORCH_FLAG, MOACERT_HAVE_CUDA_FLAG, MOACERT_HAVE_MPI_FLAG};
}

void check_tensors(const Problem& p, std::span<const TensorRef> inputs,
                   std::span<const TensorRef> outputs) {
  validate(p);
  const auto want_in = input_shapes(p), want_out = output_shapes(p);
  const auto& op = info(p.op);
  if (inputs.size() != want_in.size() || outputs.size() != want_out.size()) {
    throw std::invalid_argument(std::string(op.name) + ": expected " +
                                std::to_string(want_in.size()) + " inputs and " +
                                std::to_string(want_out.size()) + " outputs");
  }
  auto check = [&](const char* role, std::string_view name, const TensorRef& t,
                   const moa::Shape& want) {
    if (!(t.layout.shape() == want)) {
      throw std::invalid_argument(std::string(op.name) + ": " + role + " " + std::string(name) +
                                  " has shape " + t.layout.shape().str() + ", expected " +
                                  want.str());
    }
  };
  for (std::size_t k = 0; k < inputs.size(); ++k)
    check("input", op.inputs[k], inputs[k], want_in[k]);
  for (std::size_t k = 0; k < outputs.size(); ++k)
    check("output", op.outputs[k], outputs[k], want_out[k]);
}

}  // namespace moacert::kernels
