// The ops of docs/design.md: their names (part of the interface), their
// family, and the signature of each: its inputs and outputs in the table's
// order, each with the axes it is indexed by and its element type, and its
// parameters. The problem's shapes (reference/problem.hpp), the tensors by
// name (reference/named.hpp), the case-file reader's axis table
// (oracle/case_json.cpp) and `--shape` all derive from this one table.
#pragma once

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace moacert {

enum class Op {
  attention_fwd,
  attention_bwd,
  attention_fwdbwd,
  attention_decode,
  rmsnorm,
  mlp_swiglu,
  block
};

// The families ops fall into, which share generators, regimes and bounds:
// attention over heads and positions (fwd, bwd, fwdbwd, decode), an op on
// independent rows (rmsnorm, mlp.swiglu), and the whole block, which is
// attention and rows composed.
enum class Family { attention, rows, block };

// A tensor's element type: the problem's format, or 64-bit integers (an
// index input: decode's lens), written `lens[B]:i64` in a signature.
enum class Element { real, i64 };

// An axis names the dimension it runs over: a field of Dims (B H Hkv N M D
// T Dm F), "L" (decode's cache length, Dims::M), "1" (decode's single
// query) or a product "H*D", "Hkv*D" (block's projection widths).
using Axes = std::vector<std::string_view>;

// What a kernel of an op may declare of its arithmetic
// (reference/arithmetic.hpp, docs/design.md#arithmetic): the names its a
// priori bounds are derived for (docs/bounds.md#declared-arithmetic).
// Every op may declare tensor-core accumulation for all its contractions.
struct ArithmeticVocabulary {
  std::vector<std::string_view> intermediates;  // round.NAME=FORMAT
  std::vector<std::string_view> contractions;   // sum.NAME=MODE
  // The axis each contraction sums over, in `contractions`' order: how far
  // a sum declared in f16 or bf16 reaches (properties/arithmetic_check.hpp).
  std::vector<std::string_view> contraction_axes;
  // The keys an online softmax rescales its running sum over (empty: the
  // op has none): a declared rounding of that sum (round.l) or a coarser
  // exp compounds once per key, so its reach is counted along this axis.
  std::string_view softmax_axis;
  std::vector<std::string_view> functions;  // NAME=Kulp
  bool flush_inputs = false, flush_outputs = false;
  bool tf32 = false;  // its contractions may take TF32 operands (sum.NAME=tf32)
};

struct OpInfo {
  Op op;
  std::string_view name;
  Family family;
  std::vector<std::string_view> inputs, outputs;         // names, in the table's order
  std::vector<Axes> input_axes, output_axes;             // the axes of each, alike
  std::vector<Element> input_elements, output_elements;  // the element type of each, alike
  std::vector<std::string_view> params;
  // A deployment-typical shape, as `--shape` writes it: what `bench`, `list`
  // and a partial `--shape` start from (cli/shape.cpp).
  std::string_view typical_shape;
  ArithmeticVocabulary arithmetic;
};

namespace detail {

// "q[B,H,N,D] k[B,Hkv,M,D] lens[B]:i64 -> o[B,H,N,D]": names, axes and
// element types, in order. The views point into the literal, which lives as
// long as the program.
inline void parse_signature(std::string_view sig, OpInfo& op) {
  bool outputs = false;
  while (true) {
    const std::size_t start = sig.find_first_not_of(' ');
    if (start == std::string_view::npos) return;
    sig.remove_prefix(start);
    if (sig.substr(0, 2) == "->") {
      outputs = true;
      sig.remove_prefix(2);
      continue;
    }
    const std::size_t open = sig.find('['), close = sig.find(']');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open)
      throw std::logic_error("ops table: malformed signature of " + std::string(op.name));
    Axes axes;
    for (std::string_view list = sig.substr(open + 1, close - open - 1); !list.empty();) {
      const std::size_t comma = std::min(list.find(','), list.size());
      axes.push_back(list.substr(0, comma));
      list.remove_prefix(std::min(comma + 1, list.size()));
    }
    (outputs ? op.outputs : op.inputs).push_back(sig.substr(0, open));
    (outputs ? op.output_axes : op.input_axes).push_back(std::move(axes));
    sig.remove_prefix(close + 1);
    Element element = Element::real;
    if (sig.substr(0, 4) == ":i64") {
      element = Element::i64;
      sig.remove_prefix(4);
    }
    (outputs ? op.output_elements : op.input_elements).push_back(element);
  }
}

inline OpInfo op_info(Op op, std::string_view name, Family family, std::string_view signature,
                      std::vector<std::string_view> params, std::string_view typical_shape,
                      ArithmeticVocabulary arithmetic) {
  OpInfo o{op,
           name,
           family,
           {},
           {},
           {},
           {},
           {},
           {},
           std::move(params),
           typical_shape,
           std::move(arithmetic)};
  parse_signature(signature, o);
  return o;
}

}  // namespace detail

inline const std::vector<OpInfo>& all_ops() {
  using detail::op_info;
  // The forward of attention, alone or against a KV cache, bounds the same
  // freedoms (docs/bounds.md#declared-arithmetic).
  static const ArithmeticVocabulary forward{.intermediates = {"q", "k", "v", "S", "P", "l", "lse"},
                                            .contractions = {"QK", "PV"},
                                            .contraction_axes = {"D", "M"},
                                            .softmax_axis = "M",
                                            .functions = {"exp", "log"},
                                            .flush_inputs = true,
                                            .flush_outputs = true,
                                            .tf32 = true};
  static const std::vector<OpInfo> ops = {
      op_info(Op::attention_fwd, "attention.fwd", Family::attention,
              "q[B,H,N,D] k[B,Hkv,M,D] v[B,Hkv,M,D] -> o[B,H,N,D] lse[B,H,N]", {"scale", "causal"},
              "B=1,H=8,Hkv=8,N=2048,M=2048,D=64", forward),
      op_info(
          Op::attention_bwd, "attention.bwd", Family::attention,
          "q[B,H,N,D] k[B,Hkv,M,D] v[B,Hkv,M,D] o[B,H,N,D] lse[B,H,N] do[B,H,N,D]"
          " -> dq[B,H,N,D] dk[B,Hkv,M,D] dv[B,Hkv,M,D]",
          {"scale", "causal"}, "B=1,H=8,Hkv=8,N=2048,M=2048,D=64",
          {.intermediates = {"P", "dS", "dP", "D"}, .functions = {"exp"}, .flush_outputs = true}),
      op_info(Op::attention_fwdbwd, "attention.fwdbwd", Family::attention,
              "q[B,H,N,D] k[B,Hkv,M,D] v[B,Hkv,M,D] do[B,H,N,D]"
              " -> o[B,H,N,D] lse[B,H,N] dq[B,H,N,D] dk[B,Hkv,M,D] dv[B,Hkv,M,D]",
              {"scale", "causal"}, "B=1,H=8,Hkv=8,N=2048,M=2048,D=64",
              {.intermediates = {"P", "dS", "dP", "D", "lse"},
               .softmax_axis = "M",
               .functions = {"exp", "log"},
               .flush_outputs = true}),
      op_info(Op::attention_decode, "attention.decode", Family::attention,
              "q[B,H,1,D] k[B,Hkv,L,D] v[B,Hkv,L,D] lens[B]:i64 -> o[B,H,1,D] lse[B,H,1]",
              {"scale"}, "B=4,H=32,Hkv=8,N=1,L=8192,D=128", forward),
      op_info(Op::rmsnorm, "rmsnorm", Family::rows, "x[T,D] w[D] -> y[T,D]", {"eps"},
              "T=8192,D=4096",
              {.intermediates = {"ss", "r"},
               .contractions = {"ss"},
               .contraction_axes = {"D"},
               .functions = {"sqrt", "div"},
               .flush_inputs = true,
               .flush_outputs = true}),
      op_info(Op::mlp_swiglu, "mlp.swiglu", Family::rows,
              "x[T,Dm] w1[Dm,F] w3[Dm,F] w2[F,Dm] -> y[T,Dm]", {}, "T=512,Dm=1024,F=2816",
              {.intermediates = {"gate", "up", "h"},
               .contractions = {"gate", "up", "down"},
               .contraction_axes = {"Dm", "Dm", "F"},
               .functions = {"silu"},
               .flush_outputs = true}),
      op_info(Op::block, "block", Family::block,
              "x[B,N,Dm] attn_norm[Dm] wq[Dm,H*D] wk[Dm,Hkv*D] wv[Dm,Hkv*D] wo[H*D,Dm]"
              " mlp_norm[Dm] w1[Dm,F] w3[Dm,F] w2[F,Dm] -> y[B,N,Dm]",
              {"heads", "kv_heads", "eps"}, "B=1,N=512,Dm=1024,H=16,Hkv=4,D=64,F=2816",
              // Its parts' freedoms (attention's but lse, which it does not
              // output; rmsnorm's; the MLP's), each declared once for every
              // stage that has it (docs/bounds.md#block).
              {.intermediates = {"S", "P", "l", "ss", "r", "gate", "up", "h"},
               .contractions = {"QK", "PV", "ss", "gate", "up", "down"},
               .contraction_axes = {"D", "N", "Dm", "Dm", "Dm", "F"},
               .softmax_axis = "N",
               .functions = {"exp", "log", "sqrt", "div", "silu"},
               .flush_outputs = true}),
  };
  return ops;
}

inline const OpInfo& info(Op op) {
  return all_ops()[static_cast<std::size_t>(op)];
}

// An op of the attention family (not block, whose attention is one step of
// a larger op with its own generators and bounds).
inline bool is_attention(Op op) {
  return info(op).family == Family::attention;
}

inline std::optional<Op> parse_op(std::string_view s) {
  for (const OpInfo& o : all_ops())
    if (o.name == s) return o.op;
  return std::nullopt;
}

}  // namespace moacert
