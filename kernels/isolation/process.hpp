// The processes moacert starts to run untrusted code in (a plugin's worker,
// the Python worker): each leads its own process group, is tracked while it
// lives, and is killed — with whatever it forked — by its owner, at exit,
// and on SIGINT/SIGTERM/SIGHUP, so that none outlives moacert.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace moacert::kernels::isolation {

// Starts args[0] with `args` in a process group of its own and tracks it.
// The child inherits only the descriptors without close-on-exec. Throws
// std::invalid_argument when it cannot be started (bad input: exit 2).
pid_t spawn(const std::vector<std::string>& args);

// Waits for `pid` until `deadline`, then kills it; kills its process group
// too, untracks it, and returns its wait status.
int reap(pid_t pid, std::chrono::steady_clock::time_point deadline);

// Adds `pid` to (removes it from) the processes killed at exit or on a
// terminating signal. spawn and reap do this themselves.
void track(pid_t pid);
void untrack(pid_t pid);

// "SIGSEGV", "the worker exited with status 3", ...
std::string describe_status(int status);
std::string signal_name(int signo);

// Tracked processes still running (none once every owner is destroyed),
// and their process ids.
int live_workers();
std::vector<int> live_worker_pids();

}  // namespace moacert::kernels::isolation
