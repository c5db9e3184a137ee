#include "kernels/worker/worker.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/plugin/abi.hpp"
#include "kernels/worker/connection.hpp"
#include "kernels/worker/segment.hpp"

namespace moacert::kernels::worker {

namespace {

using nlohmann::json;

// The op's extents by its signature's names (decode's cache length is L).
json dims_of_problem(const Problem& p) {
  json dims = json::object();
  for (std::string_view axis : dims_of(p.op)) dims[std::string(axis)] = p.dims.*dim_field(axis);
  return dims;
}

json tensor_json(const Placement& place, const TensorRef& t) {
  const moa::Shape s = t.layout.shape();
  const moa::Strides st = t.layout.strides();
  json shape = json::array(), strides = json::array();
  for (std::size_t k = 0; k < std::size_t(s.rank()); ++k) {
    shape.push_back(s[k]);
    strides.push_back(st[k]);
  }
  return {{"name", place.name}, {"output", place.output}, {"dtype", std::string(name(t.dtype))},
          {"shape", shape},     {"strides", strides},     {"offset", place.offset}};
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}

// A worker's kernels, served by one process at a time: the one the
// handshake came from, then, after a fault, the command started again.
class Served {
 public:
  Served(std::string command, std::unique_ptr<Connection> connection,
         std::vector<DeclaredKernel> declared, double timeout_s)
      : command_(std::move(command)),
        connection_(std::move(connection)),
        declared_(std::move(declared)),
        timeout_s_(timeout_s) {}

  // Ends the process, if one runs: the next call starts the command again.
  void fresh() {
    std::lock_guard lock(mutex_);
    connection_->stop(/*graceful=*/false);
  }

  // The kernels its handshake declared.
  const std::vector<DeclaredKernel>& declared() const { return declared_; }

  void call(const DeclaredKernel& kernel, const Problem& p, std::span<const TensorRef> inputs,
            std::span<const TensorRef> outputs, int threads) {
    std::lock_guard lock(mutex_);
    if (!connection_->running()) restart();
    std::vector<std::string> names;
    for (auto n : info(p.op).inputs) names.emplace_back(n);
    for (auto n : info(p.op).outputs) names.emplace_back(n);
    std::size_t total = 0;
    const std::vector<Placement> places = lay_out(inputs, outputs, names, total);
    segment_.reserve(total);
    segment_.prepare(places, inputs);

    json tensors = json::array();
    for (std::size_t i = 0; i < places.size(); ++i)
      tensors.push_back(
          tensor_json(places[i], i < inputs.size() ? inputs[i] : outputs[i - inputs.size()]));
    const std::uint64_t call = ++calls_;
    json request = {{"call", call},
                    {"kernel", kernel.name},
                    {"op", std::string(info(p.op).name)},
                    {"format", std::string(name(p.format))},
                    {"dims", dims_of_problem(p)},
                    {"params", json::parse(plugin::params_json(p))},  // as plugins read them
                    {"segment", {{"id", segment_.id()}, {"bytes", segment_.size()}}},
                    {"tensors", tensors}};
    if (threads > 0) request["threads"] = threads;  // certify's --threads; the determinism check's
    // A segment this process has not seen travels with the record.
    const bool new_segment = segment_.id() != segment_seen_;
    if (!connection_->send(request.dump(), new_segment ? segment_.fd() : -1)) {
      const Received gone = connection_->receive(2);
      throw KernelFault(gone.fault.empty() ? "the worker cannot be reached" : gone.fault, false);
    }
    segment_seen_ = segment_.id();

    const Received r = connection_->receive(timeout_s_);
    if (!r.fault.empty()) throw KernelFault(r.fault, r.hang);
    const json answer = json::parse(r.record, nullptr, /*allow_exceptions=*/false);
    const auto garbage = [&](const std::string& why) {
      connection_->stop(false);
      return KernelFault("answered " + why + ": " + one_line(r.record), false);
    };
    if (!answer.is_object()) throw garbage("what is not a JSON object");
    if (!answer.contains("call") || answer["call"] != call)
      throw garbage("another call than " + std::to_string(call));
    const std::string status = answer.value("status", std::string());
    const std::string message = answer.contains("message") && answer["message"].is_string()
                                    ? one_line(answer["message"].get<std::string>())
                                    : std::string();
    if (status == "error") throw KernelFault("error: " + message, false);
    if (status == "unsupported") {
      // moacert asks only inside the envelope (docs/design.md#envelope);
      // outside it, the refusal is the kernel's right.
      const std::string outside = kernel.envelope.why_outside(p);
      if (!outside.empty())
        throw std::invalid_argument("worker:" + kernel.name + " was asked outside its envelope (" +
                                    outside + ")");
      throw KernelFault("unsupported inside its envelope: " + message, false);
    }
    if (status != "done") throw garbage("an unknown status");
    if (const std::string damage = segment_.damage(places, inputs); !damage.empty()) {
      connection_->stop(false);
      throw KernelFault(damage, false);
    }
    segment_.read_outputs(places, outputs);
  }

 private:
  // After a fault: the command again, which must declare what it did.
  void restart() {
    connection_->start();
    segment_seen_ = 0;
    const Received r = connection_->receive(std::max(10.0, timeout_s_));
    if (!r.fault.empty()) throw KernelFault("started again, no handshake: " + r.fault, r.hang);
    std::vector<DeclaredKernel> again;
    try {
      again = parse_handshake(r.record, "worker");
    } catch (const WorkerError& e) {
      connection_->stop(false);
      throw KernelFault(std::string("started again: ") + e.what(), false);
    }
    if (again != declared_) {
      connection_->stop(false);
      throw KernelFault("started again, it declared other kernels", false);
    }
  }

  std::mutex mutex_;
  std::string command_;
  std::unique_ptr<Connection> connection_;
  std::vector<DeclaredKernel> declared_;
  double timeout_s_;
  Segment segment_;
  std::uint64_t segment_seen_ = 0;  // the id of the segment the process has mapped
  std::uint64_t calls_ = 0;
};

std::string names_of(const std::vector<DeclaredKernel>& kernels) {
  std::string s;
  for (const DeclaredKernel& k : kernels)
    s += (s.empty() ? "" : ", ") + k.name + " (" + std::string(info(k.op).name) + ")";
  return s;
}

// The kernel certify takes: `wanted`, else the only one of `op`, else
// `default_name`.
const DeclaredKernel& choose(const std::vector<DeclaredKernel>& declared, Op op,
                             const std::string& wanted, const std::string& default_name,
                             const std::string& who) {
  const std::string op_name(info(op).name);
  std::vector<const DeclaredKernel*> of_op;
  for (const DeclaredKernel& k : declared)
    if (k.op == op) of_op.push_back(&k);
  auto named = [&](const std::string& n) -> const DeclaredKernel* {
    for (const DeclaredKernel& k : declared)
      if (k.name == n) return &k;
    return nullptr;
  };
  if (!wanted.empty()) {
    const DeclaredKernel* k = named(wanted);
    if (!k)
      throw WorkerError(who + " has no kernel '" + wanted + "' (it has: " + names_of(declared) +
                        ")");
    if (k->op != op)
      throw WorkerError(who + ": kernel '" + wanted + "' is a kernel of " +
                        std::string(info(k->op).name) + ", not " + op_name);
    return *k;
  }
  if (of_op.size() == 1) return *of_op.front();
  if (of_op.empty())
    throw WorkerError(who + " declares no kernel of " + op_name +
                      " (it has: " + names_of(declared) + ")");
  if (const DeclaredKernel* k = named(default_name); k && k->op == op) return *k;
  throw WorkerError(who + " declares several kernels of " + op_name + " (" + names_of(declared) +
                    "): name one with --variant NAME");
}

}  // namespace

std::string kernel_name_of(const std::string& variant) {
  return variant.rfind("worker:", 0) == 0 ? variant.substr(7) : std::string();
}

namespace {

// The worker `command` started, its handshake read and checked: the
// process, ready to serve what it declares.
std::shared_ptr<Served> start_worker(const std::string& command, const LoadOptions& options) {
  const std::string who = "worker " + command;
  if (!(options.timeout_s > 0) || !std::isfinite(options.timeout_s))
    throw WorkerError("--timeout must be a positive number of seconds");
  if (command.find_first_not_of(" \t") == std::string::npos)
    throw WorkerError("--worker needs a command");
  auto connection = std::make_unique<Connection>(command);
  connection->start();
  const Received r = connection->receive(std::max(10.0, options.timeout_s));
  if (!r.fault.empty()) throw WorkerError(who + ": no handshake: " + r.fault);
  std::vector<DeclaredKernel> declared = parse_handshake(r.record, who);
  return std::make_shared<Served>(command, std::move(connection), std::move(declared),
                                  options.timeout_s);
}

// The variant `worker:NAME` of one declared kernel, served by `served`.
Variant variant_of(const DeclaredKernel& kernel, std::shared_ptr<Served> served,
                   const std::string& command) {
  const Op op = kernel.op;
  Variant v;
  v.op = op;
  v.name = "worker:" + kernel.name;
  v.backend = "worker";
  // A user's kernel, isolated: to certify what a plugin's is.
  v.role = Role::plugin;
  v.formats = kernel.formats;
  v.accepts_strided = kernel.accepts_strided;
  v.deterministic = false;
  v.envelope = kernel.envelope;
  v.arithmetic = kernel.arithmetic;
  v.conventions = kernel.conventions;
  v.deterministic = kernel.deterministic;
  v.summary = "worker kernel '" + kernel.name + "' of `" + command + "`, run in its process";
  if (const Variant* dnf = Registry::builtin().find_role(op, Role::dnf)) v.cost = dnf->cost;
  v.run = [served, kernel](const Problem& p, std::span<const TensorRef> in,
                           std::span<const TensorRef> out, const RunOptions& run) {
    if (std::find(kernel.formats.begin(), kernel.formats.end(), p.format) == kernel.formats.end())
      throw std::invalid_argument("worker kernel does not run " + std::string(name(p.format)));
    served->call(kernel, p, in, out, run.threads);
  };
  v.fresh_process = [served] { served->fresh(); };
  return v;
}

}  // namespace

Variant load(const std::string& command, Op op, const std::string& wanted,
             const LoadOptions& options, const std::string& default_name) {
  const std::shared_ptr<Served> served = start_worker(command, options);
  // --variant NAME or --variant worker:NAME
  const std::string wanted_name = kernel_name_of(wanted).empty() ? wanted : kernel_name_of(wanted);
  const DeclaredKernel kernel =
      choose(served->declared(), op, wanted_name, default_name, "worker " + command);
  return variant_of(kernel, served, command);
}

std::vector<Variant> load_all(const std::string& command, const LoadOptions& options) {
  const std::shared_ptr<Served> served = start_worker(command, options);
  std::vector<Variant> out;
  for (const DeclaredKernel& kernel : served->declared())
    out.push_back(variant_of(kernel, served, command));
  return out;
}

}  // namespace moacert::kernels::worker
