#include "kernels/worker/connection.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "kernels/isolation/process.hpp"
#include "kernels/isolation/socket.hpp"
#include "kernels/worker/handshake.hpp"

namespace moacert::kernels::worker {

namespace {

using Clock = std::chrono::steady_clock;

// The largest record either side sends (docs/worker-protocol.md).
constexpr std::size_t kMaxRecord = 1 << 16;

std::string quoted_prefix(const std::string& bytes) {
  std::string s;
  for (char c : bytes.substr(0, 60)) s += (c == '\n' ? ' ' : c);
  return "\"" + s + (bytes.size() > 60 ? "...\"" : "\"");
}

// How the worker ended, when it did by itself (not killed by moacert): its
// signal, or its exit status. The command runs under /bin/sh, which reports
// a child's fatal signal N as exit status 128 + N: named as the signal.
std::optional<std::string> ended_by_itself(int status) {
  if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
    return "the worker died of " + isolation::signal_name(WTERMSIG(status));
  if (!WIFEXITED(status)) return std::nullopt;
  const int code = WEXITSTATUS(status);
  if (code > 128 && code < 128 + 32 && code - 128 != SIGKILL)
    return "the worker died of " + isolation::signal_name(code - 128) + " (exit status " +
           std::to_string(code) + " from its shell)";
  return "the worker exited with status " + std::to_string(code);
}

}  // namespace

void Connection::start() {
  int sv[2], stdout_pipe[2];  // the protocol's socket; the worker's standard output
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    throw std::runtime_error("worker: cannot create a socket");
  if (pipe2(stdout_pipe, O_CLOEXEC) != 0) {
    close(sv[0]);
    close(sv[1]);
    throw std::runtime_error("worker: cannot create a pipe");
  }
  // The child's ends are inherited; the shell makes the pipe its standard
  // output (by /proc: dash redirects only descriptors 0-9) and names the
  // socket in the environment.
  fcntl(sv[1], F_SETFD, 0);
  fcntl(stdout_pipe[1], F_SETFD, 0);
  const std::string script = "exec 0</dev/null 1>/proc/self/fd/" + std::to_string(stdout_pipe[1]) +
                             "\nMOACERT_WORKER_FD=" + std::to_string(sv[1]) +
                             "; MOACERT_WORKER_PROTOCOL=" + kProtocol +
                             "; export MOACERT_WORKER_FD MOACERT_WORKER_PROTOCOL\n" + command_;
  try {
    pid_ = isolation::spawn({"/bin/sh", "-c", script});
  } catch (...) {
    for (int fd : {sv[0], sv[1], stdout_pipe[0], stdout_pipe[1]}) close(fd);
    throw;
  }
  close(sv[1]);
  close(stdout_pipe[1]);
  sock_ = sv[0];
  stdout_ = stdout_pipe[0];
  fcntl(stdout_, F_SETFL, O_NONBLOCK);
}

void Connection::stop(bool graceful) {
  // Killed before its socket closes, a worker never sees the socket
  // break, so it has no traceback to add to moacert's one line.
  if (pid_ > 0 && !graceful) kill(-pid_, SIGKILL);
  if (sock_ >= 0) close(sock_);
  if (stdout_ >= 0) close(stdout_);
  sock_ = stdout_ = -1;
  if (pid_ > 0) isolation::reap(pid_, Clock::now() + std::chrono::milliseconds(graceful ? 500 : 0));
  pid_ = -1;
}

Received Connection::fail(std::string why, bool kill_now, bool hang) {
  const pid_t pid = pid_;
  if (kill_now && pid > 0) kill(-pid, SIGKILL);  // first, as in stop()
  if (sock_ >= 0) close(sock_);
  if (stdout_ >= 0) close(stdout_);
  sock_ = stdout_ = -1;
  pid_ = -1;
  const int status = isolation::reap(pid, Clock::now() + std::chrono::seconds(kill_now ? 0 : 2));
  if (!kill_now) why = ended_by_itself(status).value_or(why);
  return {{}, std::move(why), hang};
}

std::string Connection::stray_stdout() {
  if (stdout_ < 0) return {};
  std::string bytes;
  char buf[256];
  for (;;) {
    const ssize_t n = read(stdout_, buf, sizeof buf);
    if (n > 0 && bytes.size() < 4096) {
      bytes.append(buf, std::size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {  // the worker closed its standard output: nothing more can come
      close(stdout_);
      stdout_ = -1;
    }
    break;
  }
  return bytes;
}

bool Connection::send(const std::string& record, int fd) {
  if (sock_ < 0) return false;
  return isolation::send_with_fd(sock_, record.data(), record.size(), fd) == ssize_t(record.size());
}

Received Connection::receive(double timeout_s) {
  if (sock_ < 0) return {{}, "the worker is not running", false};
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s));
  std::vector<char> buf(kMaxRecord + 1);
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      std::ostringstream seconds;
      seconds << timeout_s;
      return fail("timeout after " + seconds.str() + " s", /*kill=*/true, /*hang=*/true);
    }
    pollfd f[2] = {{sock_, POLLIN, 0}, {stdout_, POLLIN, 0}};
    const int r = poll(f, stdout_ >= 0 ? 2 : 1, int(std::min<long long>(left, 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    if (stdout_ >= 0 && (f[1].revents & (POLLIN | POLLHUP))) {
      const std::string bytes = stray_stdout();
      if (!bytes.empty())
        return fail("wrote to standard output out of turn: " + quoted_prefix(bytes),
                    /*kill=*/true);
    }
    if (!(f[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const ssize_t n = recv(sock_, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail("the worker closed its socket");
    if (std::size_t(n) > kMaxRecord)
      return fail("the worker sent a record over 64 KiB", /*kill=*/true);
    // A print just before the answer is in the pipe by now.
    if (const std::string bytes = stray_stdout(); !bytes.empty())
      return fail("wrote to standard output out of turn: " + quoted_prefix(bytes), /*kill=*/true);
    return {std::string(buf.data(), std::size_t(n)), {}, false};
  }
}

}  // namespace moacert::kernels::worker
