#include "core/dist/tcp_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "core/common/error.h"

namespace oneflow::dist {
namespace {

// Wire format: a request is op (1 byte), key length (4), key, value length (4), value; a reply is found
// (1 byte), value length (4), value.
bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}
bool ReadAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}
bool WriteBlob(int fd, const std::vector<char>& v) {
  const auto n = static_cast<uint32_t>(v.size());
  return WriteAll(fd, &n, 4) && WriteAll(fd, v.data(), v.size());
}
bool ReadBlob(int fd, std::vector<char>& v) {
  uint32_t n = 0;
  if (!ReadAll(fd, &n, 4) || n > (1u << 28)) return false;
  v.resize(n);
  return ReadAll(fd, v.data(), n);
}

// host:port -> a resolved IPv4 address; InvalidArgument naming it.
sockaddr_in Resolve(const std::string& address) {
  const size_t colon = address.rfind(':');
  OF_CHECK(colon != std::string::npos && colon > 0 && colon + 1 < address.size())
      << "rendezvous 'tcp://" << address << "' must be tcp://host:port";
  const std::string host = address.substr(0, colon), port = address.substr(colon + 1);
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  OF_CHECK(*end == '\0' && p > 0 && p < 65536) << "rendezvous 'tcp://" << address << "': port must be in [1, 65535]";
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  OF_CHECK(getaddrinfo(host.c_str(), nullptr, &hints, &found) == 0 && found != nullptr)
      << "rendezvous 'tcp://" << address << "': cannot resolve host '" << host << "'";
  sockaddr_in sa = *reinterpret_cast<sockaddr_in*>(found->ai_addr);
  freeaddrinfo(found);
  sa.sin_port = htons(static_cast<uint16_t>(p));
  return sa;
}

}  // namespace

TcpStore::TcpStore(const std::string& address, bool serve, std::chrono::milliseconds timeout)
    : address_(address), timeout_(timeout) {
  const sockaddr_in sa = Resolve(address);
  if (serve) {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (listener_ < 0 || bind(listener_, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0 ||
        listen(listener_, 128) != 0 || pipe2(wake_, O_CLOEXEC) != 0) {
      const std::string why = std::strerror(errno);
      Shutdown();
      OF_THROW(Unavailable) << "rendezvous 'tcp://" << address << "': rank 0 cannot listen there (" << why << ")";
    }
    server_ = std::thread([this] { Serve(); });
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    socket_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (socket_ >= 0 && connect(socket_, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0) break;
    if (socket_ >= 0) close(socket_);
    socket_ = -1;
    if (std::chrono::steady_clock::now() >= deadline) {
      Shutdown();  // a server thread started above
      OF_THROW(DeadlineExceeded) << "rendezvous 'tcp://" << address << "': no rank 0 answered within "
                                 << timeout.count() << " ms";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const int one = 1;
  setsockopt(socket_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  setsockopt(socket_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(socket_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

TcpStore::~TcpStore() { Shutdown(); }

void TcpStore::Shutdown() {
  if (socket_ >= 0) close(socket_);
  socket_ = -1;
  if (server_.joinable()) {
    const char stop = 1;
    (void)!write(wake_[1], &stop, 1);
    server_.join();
  }
  for (int& fd : {std::ref(listener_), std::ref(wake_[0]), std::ref(wake_[1])}) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

std::pair<bool, std::vector<char>> TcpStore::Request(char op, const std::string& key, const std::vector<char>& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::pair<bool, std::vector<char>> reply;
  char found = 0;
  const bool ok = socket_ >= 0 && WriteAll(socket_, &op, 1) && WriteBlob(socket_, {key.begin(), key.end()}) &&
                  WriteBlob(socket_, value) && ReadAll(socket_, &found, 1) && ReadBlob(socket_, reply.second);
  if (!ok) throw std::runtime_error("the rendezvous store at tcp://" + address_ + " (rank 0) stopped answering");
  reply.first = found != 0;
  return reply;
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) { Request('S', key, data); }

std::vector<char> TcpStore::get(const std::string& key) {
  wait({key}, timeout_);
  return Request('G', key, {}).second;
}

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const std::string& key : keys) {
    while (!Request('G', key, {}).first) {
      if (std::chrono::steady_clock::now() >= deadline) {
        throw std::runtime_error("key '" + key + "' did not appear in the rendezvous store within " +
                                 std::to_string(timeout.count()) + " ms");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

void TcpStore::Serve() {
  std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
  while (true) {
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;
    if (fds[1].revents & POLLIN) {
      const int c = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) fds.push_back({c, POLLIN, 0});
    }
    for (size_t i = 2; i < fds.size();) {
      bool keep = true;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char op = 0;
        std::vector<char> key, value;
        keep = ReadAll(fds[i].fd, &op, 1) && ReadBlob(fds[i].fd, key) && ReadBlob(fds[i].fd, value);
        if (keep) {
          const std::string k(key.begin(), key.end());
          char found = 1;
          std::vector<char> out;
          if (op == 'S') {
            data_[k] = std::move(value);
          } else {
            auto it = data_.find(k);
            found = it != data_.end();
            if (found) out = it->second;
          }
          keep = WriteAll(fds[i].fd, &found, 1) && WriteBlob(fds[i].fd, out);
        }
      }
      if (keep) {
        fds[i].revents = 0;
        ++i;
      } else {
        close(fds[i].fd);
        fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }
}

}  // namespace oneflow::dist
