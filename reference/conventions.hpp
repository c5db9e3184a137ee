// How a kernel takes its problem where deployed libraries differ from
// moacert's own convention without being wrong (docs/design.md#conventions):
// the outputs it produces (ggml's and ONNX Runtime's attention return no
// lse), the alignment of its causal mask (ONNX's and PyTorch's is_causal
// are top-left aligned, moacert's bottom-right), and the format it reads
// its real parameters in (scale and eps as floats). One value, declared by
// a plugin's ABI 4 entry, a worker's handshake or the Python package, each
// field read by the one function below, so that every path refuses the
// same bad declaration with the same words.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "reference/case.hpp"
#include "reference/causal.hpp"
#include "reference/format.hpp"
#include "reference/ops.hpp"
#include "reference/problem.hpp"

namespace moacert {

// The format a kernel reads its real parameters (scale, eps) in: the
// double moacert gives, or that double rounded to f32 first, as a kernel
// whose parameters are floats computes with them.
enum class ParamFormat { f64, f32 };

inline std::string_view name(CausalAlignment a) {
  return a == CausalAlignment::top_left ? "top_left" : "bottom_right";
}
inline std::string_view name(ParamFormat f) {
  return f == ParamFormat::f32 ? "f32" : "f64";
}

struct Conventions {
  // The op's outputs the kernel does not write: never judged, and the
  // certificate says so. Empty: it writes every output.
  std::vector<std::string> not_produced;
  CausalAlignment causal_alignment = CausalAlignment::bottom_right;
  ParamFormat params = ParamFormat::f64;
  // Each tensor's format where declared (empty: every tensor in the
  // problem's format); a uniform declaration is dropped at load, a mixed
  // one judged with each tensor in its own (docs/design.md#per-tensor-formats).
  std::vector<std::pair<std::string, Format>> tensor_formats;

  bool produces(std::string_view output) const {
    return std::find(not_produced.begin(), not_produced.end(), output) == not_produced.end();
  }
  // moacert's own convention: a kernel declaring nothing is judged as before.
  bool standard() const {
    return not_produced.empty() && causal_alignment == CausalAlignment::bottom_right &&
           params == ParamFormat::f64 && tensor_formats.empty();
  }
  friend bool operator==(const Conventions&, const Conventions&) = default;
};

namespace detail {

inline std::string listed(const std::vector<std::string_view>& names) {
  std::string s;
  for (std::string_view n : names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

}  // namespace detail

// The outputs a kernel writes, as declared: "o" or "o,lse" (commas or
// spaces between names); empty: every output. Returns those it does not
// write. Throws std::invalid_argument naming the field ("outputs: ...")
// for a name the op lacks, a name given twice, or no output at all.
inline std::vector<std::string> parse_not_produced(std::string_view text, Op op) {
  const std::vector<std::string_view>& outputs = info(op).outputs;
  auto fail = [](const std::string& why) { throw std::invalid_argument("outputs: " + why); };
  if (text.find_first_not_of(" ,") == std::string_view::npos) {
    if (!text.empty()) fail("names no output; the op has " + detail::listed(outputs));
    return {};
  }
  std::vector<std::string_view> written;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find_first_of(" ,", at), text.size());
    const std::string_view one = text.substr(at, end - at);
    at = end + 1;
    if (one.empty()) continue;
    if (std::find(outputs.begin(), outputs.end(), one) == outputs.end())
      fail("'" + std::string(one) + "' is not an output of " + std::string(info(op).name) +
           " (its outputs: " + detail::listed(outputs) + ")");
    if (std::find(written.begin(), written.end(), one) != written.end())
      fail("'" + std::string(one) + "' is named twice");
    written.push_back(one);
  }
  std::vector<std::string> not_produced;
  for (std::string_view o : outputs)
    if (std::find(written.begin(), written.end(), o) == written.end()) not_produced.emplace_back(o);
  return not_produced;
}

// "bottom_right" (or empty) or "top_left", for an op with a causal
// option; a top-left declaration for an op without one is refused. Throws
// std::invalid_argument naming the field ("causal_alignment: ...").
inline CausalAlignment parse_causal_alignment(std::string_view text, Op op) {
  if (text.empty() || text == "bottom_right") return CausalAlignment::bottom_right;
  if (text != "top_left")
    throw std::invalid_argument("causal_alignment: '" + std::string(text) +
                                "' is not bottom_right or top_left");
  const auto& params = info(op).params;
  if (std::find(params.begin(), params.end(), "causal") == params.end())
    throw std::invalid_argument("causal_alignment: " + std::string(info(op).name) +
                                " has no causal option");
  return CausalAlignment::top_left;
}

// "f64" (or empty) or "f32". Throws std::invalid_argument naming the field
// ("params: ...").
inline ParamFormat parse_param_format(std::string_view text) {
  if (text.empty() || text == "f64") return ParamFormat::f64;
  if (text == "f32") return ParamFormat::f32;
  throw std::invalid_argument("params: '" + std::string(text) + "' is not f64 or f32");
}

// Whether every tensor a declaration names is in `problem_format`, the
// format the kernel is run in: such a declaration says nothing moacert
// does not assume, and is dropped at load.
inline bool uniform_formats(const Conventions& c, Format problem_format) {
  return std::all_of(c.tensor_formats.begin(), c.tensor_formats.end(),
                     [&](const auto& tf) { return tf.second == problem_format; });
}

// The problem as a kernel declaring `c` takes it, which the DNF, the
// oracle and the bounds then evaluate: its causal mask aligned as declared,
// and its real parameters rounded to f32 where it reads them so (a kernel
// computing with scale = fl32(1/sqrt(D)) is not blamed for that rounding:
// it is the kernel's parameter). The rounded values are exact doubles, so
// the params JSON hands the kernel the very floats the oracle used. Each
// tensor is in its declared format (docs/design.md#per-tensor-formats).
inline Problem as_taken(Problem p, const Conventions& c) {
  p.params.causal_alignment = c.causal_alignment;
  p.tensor_formats = uniform_formats(c, p.format) ? std::vector<std::pair<std::string, Format>>{}
                                                  : c.tensor_formats;
  if (c.params == ParamFormat::f32) {
    const auto& params = info(p.op).params;
    if (std::find(params.begin(), params.end(), "scale") != params.end())
      p.params.scale = double(float(p.scale()));
    p.params.eps = double(float(p.params.eps));
  }
  return p;
}

// The case as a kernel declaring `c` takes it: its problem as_taken, and
// each float input in its declared format. A case generated for the kernel
// already is (properties' make_case draws each input in its own format);
// one that is not (a case file in one format) has its inputs rounded to
// nearest into their formats, the values the oracle then judges against.
inline Case as_taken(Case k, const Conventions& c) {
  k.problem = as_taken(std::move(k.problem), c);
  for (std::size_t i = 0; i < k.inputs.size(); ++i) {
    const DType want = input_dtype(k.problem, i);
    AnyTensor& t = k.inputs[i];
    if (t.dtype() == want) continue;
    AnyTensor rounded(want, t.layout());
    for (const moa::Index& x : moa::iota(t.shape())) rounded.set(x, t.get(x));
    t = std::move(rounded);
  }
  return k;
}

// Each tensor's format as declared: "q=f32,k=f16,v=f16,o=f32" (commas or
// spaces between items); empty: none. Names are the op's float tensors
// (reference/ops.hpp's signature; not an integer one such as decode's
// lens), each at most once; formats f64, f32, bf16, f16. Throws
// std::invalid_argument naming the field ("tensor_formats: ..."). What moacert
// does with a mixed declaration: docs/design.md#per-tensor-formats.
inline std::vector<std::pair<std::string, Format>> parse_tensor_formats(std::string_view text,
                                                                        Op op) {
  const OpInfo& oi = info(op);
  std::vector<std::string_view> tensors;
  for (std::size_t k = 0; k < oi.inputs.size(); ++k)
    if (oi.input_elements[k] == Element::real) tensors.push_back(oi.inputs[k]);
  for (std::string_view o : oi.outputs) tensors.push_back(o);
  auto fail = [](const std::string& why) { throw std::invalid_argument("tensor_formats: " + why); };
  std::vector<std::pair<std::string, Format>> out;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = std::min(text.find_first_of(" ,", at), text.size());
    const std::string_view item = text.substr(at, end - at);
    at = end + 1;
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    const std::string_view tensor = item.substr(0, eq);
    if (eq == std::string_view::npos)
      fail("'" + std::string(item) + "' is not TENSOR=FORMAT (q=f32)");
    if (std::find(tensors.begin(), tensors.end(), tensor) == tensors.end())
      fail("'" + std::string(tensor) + "' is not a tensor of " + std::string(oi.name) +
           " with a format (its tensors: " + detail::listed(tensors) + ")");
    const auto format = parse_format(item.substr(eq + 1));
    if (!format)
      fail(std::string(tensor) + ": '" + std::string(item.substr(eq + 1)) +
           "' is not a format (f64, f32, bf16, f16)");
    for (const auto& [named, f] : out)
      if (named == tensor) fail("'" + std::string(tensor) + "' is named twice");
    out.emplace_back(tensor, *format);
  }
  return out;
}

// "outputs o; causal_alignment top_left; params f32": the declaration as
// certify prints it and the certificate records it ("standard" when it is
// moacert's own convention).
inline std::string to_string(const Conventions& c) {
  std::string s;
  auto item = [&](const std::string& x) { s += (s.empty() ? "" : "; ") + x; };
  if (!c.not_produced.empty()) {
    std::string missing;
    for (const std::string& o : c.not_produced) missing += (missing.empty() ? "" : ",") + o;
    item("not produced " + missing);
  }
  if (c.causal_alignment != CausalAlignment::bottom_right)
    item("causal_alignment " + std::string(name(c.causal_alignment)));
  if (c.params != ParamFormat::f64) item("params " + std::string(name(c.params)));
  if (!c.tensor_formats.empty()) {
    std::string each;
    for (const auto& [tensor, f] : c.tensor_formats)
      each += (each.empty() ? "" : ",") + tensor + "=" + std::string(name(f));
    item("tensor_formats " + each);
  }
  return s.empty() ? "standard" : s;
}

}  // namespace moacert
