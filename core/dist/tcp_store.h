// A rendezvous store over TCP for process groups given "tcp://host:port" (Gloo's own stores are files and
// Redis): rank 0 serves keys and values on host:port from a thread of its own; every rank, rank 0
// included, talks to it through one connection. Only the ranks' rendezvous and failure records go through
// it (Note [Collective failures]); the collectives' data travels over Gloo's pairs.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gloo/rendezvous/store.h>

namespace oneflow::dist {

class TcpStore final : public gloo::rendezvous::Store {
 public:
  // `address` is "host:port"; `serve`: this process runs the server (rank 0). Connecting retries until
  // `timeout` (the server may start later): Unavailable after it, naming the address.
  TcpStore(const std::string& address, bool serve, std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string& key, const std::vector<char>& data) override;
  // Waits (up to the timeout given at construction) for the key.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  // Throws (a std::runtime_error, as Gloo's stores do) when a key is still missing after `timeout`.
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  // One request: op 'S' (set key = value) or 'G' (get key: found flag and value). Serialised.
  std::pair<bool, std::vector<char>> Request(char op, const std::string& key, const std::vector<char>& value);
  void Serve();
  // Stops the server thread and closes the sockets; idempotent.
  void Shutdown();

  std::string address_;
  std::chrono::milliseconds timeout_;
  int socket_ = -1;         // the client connection
  std::mutex mutex_;
  int listener_ = -1;       // the server's listening socket (rank 0)
  int wake_[2] = {-1, -1};  // a pipe that stops the server thread
  std::thread server_;
  std::map<std::string, std::vector<char>> data_;  // the server's keys (its thread only)
};

}  // namespace oneflow::dist
