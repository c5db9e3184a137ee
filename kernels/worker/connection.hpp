// A worker process and its protocol socket (docs/worker-protocol.md, "The
// worker is moacert's isolated child"): started with `/bin/sh -c`, its
// standard output a pipe watched for bytes out of turn, its records sent
// and received within a deadline. Process supervision is
// kernels/isolation/'s, as for plugin workers.
#pragma once

#include <sys/types.h>

#include <string>

namespace moacert::kernels::worker {

// What one wait for a record gave: the record, or why there is none.
struct Received {
  std::string record;
  std::string fault;  // non-empty: the worker is gone (and reaped) or misbehaved
  bool hang = false;  // the fault is a timeout
};

class Connection {
 public:
  explicit Connection(std::string command) : command_(std::move(command)) {}
  ~Connection() { stop(/*graceful=*/true); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts the command (throws std::invalid_argument when it cannot be).
  void start();
  bool running() const { return pid_ > 0; }
  // Sends one record, with `fd` as SCM_RIGHTS when it is not -1. False
  // when the worker can no longer be reached.
  bool send(const std::string& record, int fd);
  // The next record within `timeout_s`. On a fault the worker is stopped.
  Received receive(double timeout_s);
  // Closes the socket and lets the worker exit (graceful: half a second),
  // then kills its process group.
  void stop(bool graceful);

 private:
  // The worker is gone or misbehaved: stop it (`kill`: at once, for a
  // hang or bytes out of turn), and say why, with how it ended when it
  // ended by itself.
  Received fail(std::string why, bool kill = false, bool hang = false);
  std::string stray_stdout();

  std::string command_;
  pid_t pid_ = -1;
  int sock_ = -1, stdout_ = -1;
};

}  // namespace moacert::kernels::worker
