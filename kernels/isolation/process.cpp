#include "kernels/isolation/process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>

extern char** environ;

namespace moacert::kernels::isolation {

namespace {

using Clock = std::chrono::steady_clock;

// ---- Every worker moacert started, so that none outlives it: killed by
// its owner, at exit, and on SIGINT/SIGTERM/SIGHUP.
constexpr int kSlots = 64;
std::atomic<pid_t> g_live[kSlots];

void kill_all_live() {
  for (auto& slot : g_live) {
    const pid_t p = slot.exchange(0);
    if (p > 0) {
      kill(-p, SIGKILL);  // the worker leads its own process group: its children too
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
  }
}

void on_terminate(int signo) {
  kill_all_live();  // kill and waitpid are async-signal-safe
  signal(signo, SIG_DFL);
  raise(signo);
}

}  // namespace

void track(pid_t p) {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(kill_all_live);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      sigaction(s, nullptr, &old);
      if (old.sa_handler == SIG_DFL) signal(s, on_terminate);
    }
  });
  for (auto& slot : g_live) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, p)) return;
  }
}

void untrack(pid_t p) {
  for (auto& slot : g_live) {
    pid_t expected = p;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

std::string signal_name(int s) {
  static const std::map<int, const char*> names = {
      {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGILL, "SIGILL"},
      {SIGABRT, "SIGABRT"}, {SIGTRAP, "SIGTRAP"}, {SIGSYS, "SIGSYS"},   {SIGKILL, "SIGKILL"},
      {SIGTERM, "SIGTERM"}, {SIGINT, "SIGINT"},   {SIGPIPE, "SIGPIPE"}, {SIGXCPU, "SIGXCPU"}};
  const auto it = names.find(s);
  return it != names.end() ? it->second : "signal " + std::to_string(s);
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return signal_name(WTERMSIG(status));
  if (WIFEXITED(status))
    return "the worker exited with status " + std::to_string(WEXITSTATUS(status));
  return "the worker stopped";
}

int reap(pid_t pid, Clock::time_point deadline) {
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (Clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    usleep(2000);
  }
  // Whatever the worker forked is in its process group: it goes too (the
  // group outlives its reaped leader while it has members).
  kill(-pid, SIGKILL);
  untrack(pid);
  return status;
}

pid_t spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Its own process group, so that a plugin's children can be killed with
  // it, and a terminal's Ctrl-C reaches moacert alone (which then kills it).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const int e = posix_spawn(&pid, argv[0], nullptr, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (e != 0) throw std::invalid_argument("cannot start " + args[0] + ": " + std::strerror(e));
  track(pid);
  return pid;
}

std::vector<int> live_worker_pids() {
  std::vector<int> pids;
  for (auto& slot : g_live)
    if (const pid_t p = slot.load(); p > 0) pids.push_back(int(p));
  return pids;
}

int live_workers() {
  int n = 0;
  for (auto& slot : g_live) n += slot.load() > 0;
  return n;
}

}  // namespace moacert::kernels::isolation
