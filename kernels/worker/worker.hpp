// Workers (docs/worker-protocol.md): a program in any language that serves
// kernels over a socket, `--worker "CMD ARGS"`. moacert starts it as its
// isolated child, reads the kernels it declares, and certifies each like a
// built-in variant; the worker's crash, hang, garbage or print out of turn
// is the kernel's counterexample (KernelFault), never moacert's.
#pragma once

#include <string>

#include "kernels/registry.hpp"
#include "kernels/worker/handshake.hpp"

namespace moacert::kernels::worker {

struct LoadOptions {
  double timeout_s = 60;  // per call and for the handshake; past it the worker is killed
};

// The kernel of `op` the worker started by `command` declares, as one
// Variant `worker:<name>` of backend "worker" and role plugin (a user's
// kernel, isolated): `wanted` names it among several of `op` (empty: the
// only one, else `default_name`, a token's). The worker is kept running
// for the variant's calls and started again after a fault. Throws
// WorkerError (exit 2) for a handshake moacert cannot use.
Variant load(const std::string& command, Op op, const std::string& wanted,
             const LoadOptions& options = {}, const std::string& default_name = {});

// Every kernel the worker started by `command` declares, each as load()
// makes it, in the order of its handshake, all served by that one process
// (`moacert report --worker`). Throws WorkerError as load() does.
std::vector<Variant> load_all(const std::string& command, const LoadOptions& options = {});

// The NAME of a variant name `worker:NAME`, or empty.
std::string kernel_name_of(const std::string& variant);

}  // namespace moacert::kernels::worker
