// One message over a unix socket with a descriptor passed along it
// (SCM_RIGHTS): how moacert hands an isolated process the memfd its
// tensors lie in (the plugin worker, kernels/plugin/; a worker in any
// language, kernels/worker/).
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace moacert::kernels::isolation {

// Sends `bytes` bytes at `data` as one message on `sock`, with `fd` when it
// is not -1, retrying on EINTR and never raising SIGPIPE. Returns what
// sendmsg returned: the bytes sent, or -1.
ssize_t send_with_fd(int sock, const void* data, std::size_t bytes, int fd);

}  // namespace moacert::kernels::isolation
