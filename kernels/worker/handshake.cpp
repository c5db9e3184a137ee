#include "kernels/worker/handshake.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "reference/arithmetic_spec.hpp"

namespace moacert::kernels::worker {

namespace {

using nlohmann::json;

const json& member(const json& o, const char* key, const std::string& where) {
  if (!o.contains(key)) throw WorkerError(where + ": no \"" + key + "\"");
  return o.at(key);
}

std::string text_member(const json& o, const char* key, const std::string& where) {
  const json& v = member(o, key, where);
  if (!v.is_string() || v.get<std::string>().empty())
    throw WorkerError(where + ": \"" + key + "\" is not a non-empty string");
  return v.get<std::string>();
}

// The conventions a kernel declares (docs/design.md#conventions): the
// outputs it writes, as a list of names; its causal alignment and its
// parameters' format, as text. Each field read by reference/conventions.hpp,
// as a plugin's are.
Conventions conventions_of(const json& k, Op op, const std::string& where) {
  auto text = [&](const char* key) -> std::string {
    if (!k.contains(key)) return {};
    if (!k.at(key).is_string()) throw WorkerError(where + ": \"" + key + "\" is not a string");
    return k.at(key).get<std::string>();
  };
  Conventions c;
  try {
    if (k.contains("outputs")) {
      const json& outputs = k.at("outputs");
      if (!outputs.is_array()) throw WorkerError(where + ": \"outputs\" is not a list of names");
      std::string names;
      for (const json& o : outputs) {
        if (!o.is_string() || o.get<std::string>().empty() ||
            o.get<std::string>().find_first_of(" ,") != std::string::npos)
          throw WorkerError(where + ": \"outputs\" holds " + o.dump() + ", not an output's name");
        names += o.get<std::string>() + ",";
      }
      if (outputs.empty()) throw std::invalid_argument("outputs: names no output");
      c.not_produced = parse_not_produced(names, op);
    }
    c.causal_alignment = parse_causal_alignment(text("causal_alignment"), op);
    c.params = parse_param_format(text("params"));
    if (k.contains("tensor_formats")) {  // {"q": "f32", "k": "f16"}
      const json& formats = k.at("tensor_formats");
      if (!formats.is_object())
        throw WorkerError(where + ": \"tensor_formats\" is not an object of tensor: format");
      std::string items;
      for (auto it = formats.begin(); it != formats.end(); ++it)
        items += it.key() + "=" +
                 (it.value().is_string() ? it.value().get<std::string>() : it.value().dump()) + ",";
      c.tensor_formats = parse_tensor_formats(items, op);
    }
  } catch (const WorkerError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw WorkerError(where + ": " + e.what());
  }
  return c;
}

DeclaredKernel parse_kernel(const json& k, const std::string& who, std::size_t index) {
  const std::string at = who + ": kernel " + std::to_string(index);
  if (!k.is_object()) throw WorkerError(at + " is not a JSON object");
  static const std::set<std::string> known = {
      "op",         "name",    "formats",          "envelope", "device",         "accepts_strided",
      "arithmetic", "outputs", "causal_alignment", "params",   "tensor_formats", "deterministic"};
  for (auto it = k.begin(); it != k.end(); ++it)
    if (!known.count(it.key())) throw WorkerError(at + ": unknown member \"" + it.key() + "\"");
  DeclaredKernel d;
  d.name = text_member(k, "name", at);
  const std::string where = who + ": " + d.name;
  const std::string op = text_member(k, "op", where);
  const auto parsed_op = parse_op(op);
  if (!parsed_op) throw WorkerError(where + ": unknown op '" + op + "' (moacert list)");
  d.op = *parsed_op;

  const json& formats = member(k, "formats", where);
  if (!formats.is_array() || formats.empty())
    throw WorkerError(where + ": \"formats\" is not a non-empty list");
  for (const json& f : formats) {
    const auto format = f.is_string() ? parse_format(f.get<std::string>()) : std::nullopt;
    if (!format)
      throw WorkerError(where + ": unknown format " + f.dump() + " (f64, f32, bf16, f16)");
    if (std::find(d.formats.begin(), d.formats.end(), *format) != d.formats.end())
      throw WorkerError(where + ": format " + f.get<std::string>() + " is declared twice");
    d.formats.push_back(*format);
  }
  std::sort(d.formats.begin(), d.formats.end());

  // The envelope's own device, unless the kernel names one; both: they agree.
  try {
    d.envelope = k.contains("envelope") ? envelope_from_json(k.at("envelope")) : Envelope{};
    if (k.contains("device")) {
      const json& device = k.at("device");
      const std::string dev = device.is_string() ? device.get<std::string>() : device.dump();
      const Device named = dev == "cuda" ? Device::cuda : Device::cpu;
      if (dev != "cpu" && dev != "cuda")
        throw std::invalid_argument("device " + dev + " is neither cpu nor cuda");
      const bool envelope_names_one = k.contains("envelope") && k.at("envelope").is_object() &&
                                      k.at("envelope").contains("device");
      if (envelope_names_one && d.envelope.device != named)
        throw std::invalid_argument("device " + dev + " is not the envelope's " +
                                    std::string(name(d.envelope.device)));
      d.envelope.device = named;
    }
    d.envelope.check(d.op, d.name);
  } catch (const std::invalid_argument& e) {
    const std::string why = e.what();
    // Envelope::check names the kernel itself; envelope_from_json does not.
    throw WorkerError(who + ": " +
                      (why.rfind(d.name + ":", 0) == 0 ? why : d.name + ": envelope: " + why));
  }
  if (k.contains("accepts_strided")) {
    if (!k.at("accepts_strided").is_boolean())
      throw WorkerError(where + ": \"accepts_strided\" is not true or false");
    d.accepts_strided = k.at("accepts_strided").get<bool>();
  }
  // Its arithmetic (docs/design.md#arithmetic): the standard model unless
  // declared.
  if (k.contains("arithmetic")) {
    if (!k.at("arithmetic").is_string())
      throw WorkerError(where + ": \"arithmetic\" is not a string (docs/design.md#arithmetic)");
    try {
      d.arithmetic = parse_arithmetic(k.at("arithmetic").get<std::string>(), d.op);
    } catch (const std::invalid_argument& e) {
      throw WorkerError(where + ": " + e.what());
    }
  }
  d.conventions = conventions_of(k, d.op, where);
  // A declaration uniform in every format the kernel runs is dropped; a
  // mixed one is judged tensor by tensor (docs/design.md#per-tensor-formats).
  if (std::all_of(d.formats.begin(), d.formats.end(),
                  [&](Format f) { return uniform_formats(d.conventions, f); }))
    d.conventions.tensor_formats.clear();
  if (k.contains("deterministic")) {
    if (!k.at("deterministic").is_boolean())
      throw WorkerError(where + ": \"deterministic\" is not true or false");
    d.deterministic = k.at("deterministic").get<bool>();
  }
  return d;
}

}  // namespace

std::vector<DeclaredKernel> parse_handshake(const std::string& record, const std::string& who) {
  const json h = json::parse(record, nullptr, /*allow_exceptions=*/false);
  if (!h.is_object())
    throw WorkerError(who + ": the handshake is not a JSON object: " + record.substr(0, 80));
  if (!h.contains("protocol") || !h.at("protocol").is_string())
    throw WorkerError(who + ": the handshake names no \"protocol\"");
  if (const std::string p = h.at("protocol").get<std::string>(); p != kProtocol)
    throw WorkerError(who + " speaks " + p + ", this moacert speaks " + kProtocol);
  const json& kernels = member(h, "kernels", who + ": the handshake");
  if (!kernels.is_array() || kernels.empty())
    throw WorkerError(who + ": the handshake declares no kernels");
  std::vector<DeclaredKernel> out;
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    DeclaredKernel d = parse_kernel(kernels[i], who, i);
    for (const DeclaredKernel& e : out)
      if (e.name == d.name)
        throw WorkerError(who + ": kernel name '" + d.name + "' is declared twice");
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace moacert::kernels::worker
