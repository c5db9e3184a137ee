#include "kernels/isolation/socket.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace moacert::kernels::isolation {

ssize_t send_with_fd(int sock, const void* data, std::size_t bytes, int fd) {
  iovec iov{const_cast<void*>(data), bytes};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  ssize_t sent;
  do sent = sendmsg(sock, &m, MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  return sent;
}

}  // namespace moacert::kernels::isolation
