#include "oracle/case_json.hpp"

#include <sys/stat.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <optional>

#include <mpfr.h>
#include <nlohmann/json.hpp>

#include "oracle/rounding.hpp"

namespace moacert::oracle {

namespace {

using moa::extent_t;
using nlohmann::json;

constexpr extent_t kMaxElements = extent_t{1} << 31;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw CaseError(path + ": " + what);
}

std::string quoted(const json& j) {
  return j.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
}

// ---- numbers ----------------------------------------------------------------

// Strict C99 hex float syntax: [-]0x(h+[.h*] | .h+)p[+-]d+, or inf, -inf,
// nan. Decimal is refused: a case file names exact values.
bool hex_syntax(const std::string& s) {
  std::size_t i = 0;
  if (s == "inf" || s == "-inf" || s == "nan") return true;
  if (i < s.size() && s[i] == '-') ++i;
  if (s.compare(i, 2, "0x") != 0 && s.compare(i, 2, "0X") != 0) return false;
  i += 2;
  std::size_t digits = 0;
  while (i < s.size() && std::isxdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isxdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  }
  if (digits == 0 || i >= s.size() || (s[i] != 'p' && s[i] != 'P')) return false;
  ++i;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::size_t exp_digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exp_digits;
  return exp_digits > 0 && exp_digits <= 9 && i == s.size();
}

// The exact value of a hex float string as a double, if it is one of the
// values of format f.
std::optional<double> parse_hex(const std::string& s, Format f) {
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  mpfr_t x;
  mpfr_init2(x, static_cast<mpfr_prec_t>(4 * s.size() + 64));  // every digit exactly
  char* end = nullptr;
  const int inexact = mpfr_strtofr(x, s.c_str(), &end, 0, MPFR_RNDN);
  std::optional<double> out;
  if (inexact == 0 && end && *end == '\0' && mpfr_number_p(x)) {
    const double r = round_to_format(x, f);
    if (std::isfinite(r) && mpfr_cmp_d(x, r) == 0) out = r;  // representable
  }
  mpfr_clear(x);
  return out;
}

// A parameter: a JSON number (taken as the double it denotes) or a hex
// float string (exact).
double real_param(const json& j, const std::string& path) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (!hex_syntax(s)) fail(path, quoted(j) + " is not a number or a hex float");
    if (const auto v = parse_hex(s, Format::f64)) return *v;
    fail(path, quoted(j) + " is not a double");
  }
  fail(path, "expected a number, got " + quoted(j));
}

extent_t positive_int(const json& j, const std::string& path) {
  if (!j.is_number_integer() || j.get<std::int64_t>() < 1)
    fail(path, "expected a positive integer, got " + quoted(j));
  return j.get<std::int64_t>();
}

// ---- shapes -------------------------------------------------------------------

struct Seen {
  extent_t value;
  std::string where;
};

// The dimensions, bound on first sight and checked on every later one.
class DimBinder {
 public:
  void bind(const std::string& dim, extent_t v, const std::string& where) {
    if (dim == "1") {
      if (v != 1) fail(where, "expected 1 (one query), got " + std::to_string(v));
      return;
    }
    const auto it = seen_.find(dim);
    if (it == seen_.end()) {
      seen_[dim] = {v, where};
    } else if (it->second.value != v) {
      fail(where, dim + " = " + std::to_string(v) + " here but " +
                      std::to_string(it->second.value) + " in " + it->second.where);
    }
  }
  bool has(const std::string& dim) const { return seen_.count(dim) != 0; }
  const Seen& at(const std::string& dim) const { return seen_.at(dim); }
  extent_t get(const std::string& dim, extent_t otherwise = 1) const {
    const auto it = seen_.find(dim);
    return it == seen_.end() ? otherwise : it->second.value;
  }

 private:
  std::map<std::string, Seen> seen_;
};

const json& member(const json& obj, const std::string& key, const std::string& path) {
  const auto it = obj.find(key);
  if (it == obj.end()) fail(path, "missing");
  return *it;
}

// A broadcast tensor's elements that share an offset hold one value: each
// logical element of `data` (row-major) reads back as written. Refuses the
// first that does not, naming it.
void require_one_value_per_offset(const AnyTensor& t, Format f, const json& data,
                                  const std::string& path) {
  std::size_t n = 0;
  for (const moa::Index& i : moa::iota(t.shape())) {
    const json& v = data[n];
    const double written =
        v.is_string() ? *parse_hex(v.get<std::string>(), f) : double(v.get<std::int64_t>());
    const double read = t.get(i);
    if (std::bit_cast<std::uint64_t>(read) != std::bit_cast<std::uint64_t>(written) &&
        !(std::isnan(read) && std::isnan(written))) {
      fail(path + ".data[" + std::to_string(n) + "]",
           quoted(v) + " differs from an element it shares its offset with (a stride-0 axis)");
    }
    ++n;
  }
}

}  // namespace

Case read_case(const json& j) {
  if (!j.is_object()) fail("case", "expected a JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "op" && key != "dtype" && key != "params" && key != "tensors")
      fail(key, "unknown field (expected op, dtype, params, tensors)");
  }
  Case c;
  Problem& p = c.problem;

  // op, dtype
  const json& op = member(j, "op", "op");
  if (!op.is_string()) fail("op", "expected a string, got " + quoted(op));
  const auto parsed_op = parse_op(op.get<std::string>());
  if (!parsed_op) fail("op", "unknown op " + quoted(op));
  p.op = *parsed_op;
  const OpInfo& oi = info(p.op);
  const std::string op_name(oi.name);
  const json& dtype = member(j, "dtype", "dtype");
  if (!dtype.is_string()) fail("dtype", "expected a string, got " + quoted(dtype));
  const auto parsed_format = parse_format(dtype.get<std::string>());
  if (!parsed_format) fail("dtype", "unknown dtype " + quoted(dtype) + " (f64, f32, bf16, f16)");
  p.format = *parsed_format;

  // params
  std::optional<extent_t> heads, kv_heads;
  if (j.contains("params")) {
    const json& params = j.at("params");
    if (!params.is_object()) fail("params", "expected an object, got " + quoted(params));
    for (const auto& [key, value] : params.items()) {
      const std::string path = "params." + key;
      // How the kernel the case was judged for aligns its mask
      // (docs/design.md#conventions); beside `causal`, written only when
      // top-left.
      const bool alignment =
          key == "causal_alignment" &&
          std::find(oi.params.begin(), oi.params.end(), "causal") != oi.params.end();
      if (alignment) {
        if (value != "top_left" && value != "bottom_right")
          fail(path, "expected \"bottom_right\" or \"top_left\", got " + quoted(value));
        p.params.causal_alignment =
            value == "top_left" ? CausalAlignment::top_left : CausalAlignment::bottom_right;
        continue;
      }
      if (std::find(oi.params.begin(), oi.params.end(), key) == oi.params.end())
        fail(path, "not a parameter of " + op_name);
      if (key == "scale") {
        p.params.scale = real_param(value, path);
        if (!(p.params.scale > 0) || !std::isfinite(p.params.scale))
          fail(path, "must be positive and finite");
      } else if (key == "causal") {
        if (!value.is_boolean()) fail(path, "expected true or false, got " + quoted(value));
        p.params.causal = value.get<bool>();
      } else if (key == "eps") {
        p.params.eps = real_param(value, path);
        if (!(p.params.eps >= 0) || !std::isfinite(p.params.eps))
          fail(path, "must be non-negative and finite");
      } else if (key == "heads") {
        heads = positive_int(value, path);
      } else if (key == "kv_heads") {
        kv_heads = positive_int(value, path);
      }
    }
  }
  if (p.op == Op::block) {
    if (!heads) fail("params.heads", "missing (block needs heads and kv_heads)");
    if (!kv_heads) fail("params.kv_heads", "missing (block needs heads and kv_heads)");
    if (*heads % *kv_heads != 0)
      fail("params.kv_heads",
           std::to_string(*kv_heads) + " does not divide heads = " + std::to_string(*heads));
  }

  // tensors: names, then shapes (all of them, before any data is read)
  const json& tensors = member(j, "tensors", "tensors");
  if (!tensors.is_object()) fail("tensors", "expected an object, got " + quoted(tensors));
  for (const auto& [key, value] : tensors.items()) {
    if (std::find(oi.inputs.begin(), oi.inputs.end(), key) == oi.inputs.end())
      fail("tensors." + key, "not an input of " + op_name);
  }
  const auto& axes = oi.input_axes;  // reference/ops.hpp
  DimBinder dims;
  if (heads) dims.bind("H", *heads, "params.heads");
  if (kv_heads) dims.bind("Hkv", *kv_heads, "params.kv_heads");
  std::vector<moa::Shape> shapes;
  for (std::size_t k = 0; k < oi.inputs.size(); ++k) {
    const std::string tname(oi.inputs[k]), path = "tensors." + tname;
    const json& t = member(tensors, tname, path);
    if (!t.is_object()) fail(path, "expected an object, got " + quoted(t));
    for (const auto& [key, value] : t.items()) {
      if (key != "shape" && key != "strides" && key != "data" && key != "dtype")
        fail(path + "." + key, "unknown field (expected shape, strides, data, dtype)");
    }
    // A float tensor's own format, where a kernel declares one other than
    // the case's dtype (docs/design.md#per-tensor-formats).
    if (t.contains("dtype")) {
      const json& own = t.at("dtype");
      const auto f = own.is_string() ? parse_format(own.get<std::string>()) : std::nullopt;
      if (is_index_input(p.op, k) || !f)
        fail(path + ".dtype",
             "expected f64, f32, bf16 or f16 for a float tensor, got " + quoted(own));
      if (*f != p.format) p.tensor_formats.emplace_back(tname, *f);
    }
    const json& shape = member(t, "shape", path + ".shape");
    if (!shape.is_array()) fail(path + ".shape", "expected an array, got " + quoted(shape));
    const std::size_t rank = axes[k].size();
    if (shape.size() != rank) {
      fail(path + ".shape",
           "expected " + std::to_string(rank) + " dims, got " + std::to_string(shape.size()));
    }
    moa::Shape s;
    extent_t count = 1;
    for (std::size_t a = 0; a < rank; ++a) {
      const std::string where = path + ".shape[" + std::to_string(a) + "]";
      const extent_t v = positive_int(shape[a], where);
      if (__builtin_mul_overflow(count, v, &count) || count > kMaxElements)
        fail(path + ".shape", "more than 2^31 elements");
      s.push_back(v);
      const std::string dim(axes[k][a]);
      if (dim == "H*D" || dim == "Hkv*D") {  // block: H·D and Hkv·D, the heads given
        const bool q = dim == "H*D";
        const extent_t h = dims.get(q ? "H" : "Hkv");
        if (v % h != 0) {
          fail(where, std::to_string(v) + " is not a multiple of params." +
                          (q ? "heads" : "kv_heads") + " = " + std::to_string(h));
        }
        dims.bind("D", v / h, where + " / params." + (q ? "heads" : "kv_heads"));
      } else {
        dims.bind(dim, v, where);
      }
    }
    shapes.push_back(s);
  }
  if (p.op != Op::block && dims.has("Hkv") && dims.get("H") % dims.get("Hkv") != 0) {
    fail(dims.at("Hkv").where, "Hkv = " + std::to_string(dims.get("Hkv")) +
                                   " does not divide H = " + std::to_string(dims.get("H")));
  }
  Dims& d = p.dims;
  d.B = dims.get("B");
  d.H = dims.get("H");
  d.Hkv = dims.get("Hkv");
  d.N = dims.get("N");
  d.M = dims.get(p.op == Op::attention_decode ? "L" : "M");
  d.D = dims.get("D");
  d.T = dims.get("T");
  d.Dm = dims.get("Dm");
  d.F = dims.get("F");
  try {
    validate(p);
  } catch (const std::invalid_argument& e) {
    fail("case", e.what());
  }
  const auto expected = input_shapes(p);
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    if (shapes[k] != expected[k]) {  // a consequence of the checks above; kept as a guard
      fail("tensors." + std::string(oi.inputs[k]) + ".shape",
           "expected " + expected[k].str() + ", got " + shapes[k].str());
    }
  }

  // layouts and data
  for (std::size_t k = 0; k < oi.inputs.size(); ++k) {
    const std::string tname(oi.inputs[k]), path = "tensors." + tname;
    const json& t = tensors.at(tname);
    const bool index = is_index_input(p, static_cast<int>(k));
    moa::Layout layout = moa::Layout::row_major(shapes[k]);
    if (t.contains("strides")) {
      const json& strides = t.at("strides");
      const std::string sp = path + ".strides";
      if (!strides.is_array()) fail(sp, "expected an array, got " + quoted(strides));
      if (strides.size() != static_cast<std::size_t>(shapes[k].rank())) {
        fail(sp, "expected " + std::to_string(shapes[k].rank()) + " entries, got " +
                     std::to_string(strides.size()));
      }
      moa::Strides st;
      for (std::size_t a = 0; a < strides.size(); ++a) {
        const json& v = strides[a];
        if (!v.is_number_integer() || v.get<std::int64_t>() < 0) {
          fail(sp + "[" + std::to_string(a) + "]",
               "expected a non-negative integer, got " + quoted(v));
        }
        st.push_back(v.get<std::int64_t>());
      }
      // Stride 0 is a broadcast axis (a generated case's broadcast layout,
      // which `reproduce --save` writes): its coordinates share one offset,
      // and must then hold one value (checked below). Any other alias is
      // refused: the other axes must reach distinct offsets.
      moa::Shape distinct = shapes[k];
      for (int a = 0; a < distinct.rank(); ++a)
        if (st[a] == 0) distinct[a] = 1;
      try {
        moa::Layout::bijective(distinct, st);
        layout = moa::Layout::strided(shapes[k], st);
      } catch (const moa::ShapeError& e) {
        fail(sp, e.what());
      }
      if (layout.cosize() > 2 * kMaxElements) fail(sp, "the layout spans more than 2^32 elements");
    }
    const json& data = member(t, "data", path + ".data");
    if (!data.is_array()) fail(path + ".data", "expected an array, got " + quoted(data));
    const extent_t count = moa::tau(shapes[k]);
    if (static_cast<extent_t>(data.size()) != count) {
      fail(path + ".data", "expected " + std::to_string(count) + " values (shape " +
                               shapes[k].str() + "), got " + std::to_string(data.size()));
    }
    AnyTensor tensor(input_dtype(p, k), layout);
    const Format own = input_format(p, k);
    std::size_t n = 0;
    for (const moa::Index& i : moa::iota(shapes[k])) {
      const json& v = data[n];
      const std::string where = path + ".data[" + std::to_string(n) + "]";
      ++n;
      if (index) {
        if (!v.is_number_integer()) fail(where, "expected an integer, got " + quoted(v));
        const std::int64_t len = v.get<std::int64_t>();
        if (len < 1 || len > d.M) {
          fail(where, std::to_string(len) + " is out of [1, L = " + std::to_string(d.M) + "]");
        }
        tensor.set(i, double(len));
        continue;
      }
      if (!v.is_string()) fail(where, "expected a hex float string, got " + quoted(v));
      const std::string s = v.get<std::string>();
      if (!hex_syntax(s)) fail(where, quoted(v) + " is not a hex float");
      const auto value = parse_hex(s, own);
      if (!value)
        fail(where, quoted(v) + " is not representable in " + std::string(moacert::name(own)));
      tensor.set(i, *value);
    }
    if (!layout.is_injective()) require_one_value_per_offset(tensor, own, data, path);
    c.inputs.push_back(std::move(tensor));
  }
  return c;
}

Case read_case_file(const std::string& path) {
  // A folder opens as a stream on Linux and fails only when read (with an
  // exception that is not a CaseError): refuse anything but a file first.
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw CaseError(path + ": cannot open");
  if (!S_ISREG(st.st_mode)) throw CaseError(path + ": not a regular file");
  std::ifstream in(path);
  if (!in) throw CaseError(path + ": cannot open");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw CaseError(path + ": not JSON (" + std::string(e.what()) + ")");
  } catch (const std::exception& e) {  // an I/O error while reading
    throw CaseError(path + ": cannot read (" + std::string(e.what()) + ")");
  }
  return read_case(j);
}

std::string hex_float(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", x);
  return buf;
}

namespace {

json params_json(const Problem& p) {
  json params = json::object();
  for (std::string_view key : info(p.op).params) {
    if (key == "scale" && p.params.scale != 0) params["scale"] = hex_float(p.params.scale);
    if (key == "causal") params["causal"] = p.params.causal;
    if (key == "causal" && p.params.causal_alignment == CausalAlignment::top_left)
      params["causal_alignment"] = "top_left";
    if (key == "eps") params["eps"] = hex_float(p.params.eps);
    if (key == "heads") params["heads"] = p.dims.H;
    if (key == "kv_heads") params["kv_heads"] = p.dims.Hkv;
  }
  return params;
}

json shape_json(const moa::Shape& s) {
  json a = json::array();
  for (extent_t e : s) a.push_back(e);
  return a;
}

}  // namespace

json write_case(const Case& c) {
  const Problem& p = c.problem;
  const OpInfo& oi = info(p.op);
  json tensors = json::object();
  for (std::size_t k = 0; k < c.inputs.size() && k < oi.inputs.size(); ++k) {
    const AnyTensor& t = c.inputs[k];
    json entry = {{"shape", shape_json(t.shape())}};
    // Strides when the layout is flat and not row-major; a tiled layout has
    // no strides, and its values are written (row-major) all the same.
    if (t.layout().is_flat() && !(t.layout() == moa::Layout::row_major(t.shape()))) {
      json strides = json::array();
      for (extent_t s : t.layout().strides()) strides.push_back(s);
      entry["strides"] = strides;
    }
    json data = json::array();
    const bool index = t.dtype() == DType::i64;
    for (const moa::Index& i : moa::iota(t.shape())) {
      if (index) {
        data.push_back(static_cast<std::int64_t>(t.get(i)));
      } else {
        data.push_back(hex_float(t.get(i)));
      }
    }
    entry["data"] = std::move(data);
    if (!index && input_format(p, k) != p.format)  // its own (per-tensor-formats)
      entry["dtype"] = std::string(moacert::name(input_format(p, k)));
    tensors[std::string(oi.inputs[k])] = std::move(entry);
  }
  return {{"op", std::string(oi.name)},
          {"dtype", std::string(moacert::name(p.format))},
          {"params", params_json(p)},
          {"tensors", std::move(tensors)}};
}

json write_answer(const Case& c, const Answer& a) {
  const Problem& p = c.problem;
  json tensors = json::object();
  json undetermined = json::array();
  for (std::size_t o = 0; o < a.outputs.size(); ++o) {
    const TensorAnswer& t = a.outputs[o];
    json data = json::array(), exact = json::array();
    for (std::size_t i = 0; i < t.rounded.size(); ++i) {
      if (!t.evaluated[i]) {  // not in the selection (oracle --rows): null
        data.push_back(nullptr);
        if (!t.exact_decimal.empty()) exact.push_back(nullptr);
        continue;
      }
      data.push_back(hex_float(t.rounded[i]));
      if (!t.exact_decimal.empty()) exact.push_back(t.exact_decimal[i]);
      if (t.undetermined[i]) undetermined.push_back({{"tensor", t.name}, {"index", i}});
    }
    json entry = {{"shape", shape_json(t.shape)}, {"data", std::move(data)}};
    if (!t.exact_decimal.empty()) entry["exact"] = std::move(exact);
    if (output_format(p, o) != p.format)  // its own (per-tensor-formats)
      entry["dtype"] = std::string(moacert::name(output_format(p, o)));
    tensors[t.name] = std::move(entry);
  }
  json out = {{"op", std::string(info(p.op).name)},
              {"dtype", std::string(moacert::name(p.format))},
              {"params", params_json(p)},
              {"tensors", std::move(tensors)},
              {"oracle",
               {{"elements", a.elements},
                {"decided_first", a.decided_first},
                {"max_precision_used", a.max_precision_used}}}};
  if (!undetermined.empty()) out["undetermined"] = std::move(undetermined);
  return out;
}

std::string case_file_text(const json& j) {
  return j.dump(1) + "\n";
}

}  // namespace moacert::oracle
