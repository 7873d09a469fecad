#pragma once
// A tiny HTTP/1.1 server on 127.0.0.1 (a port the kernel picks) for the
// download tests: it serves files from memory (GET and HEAD, with headers of
// their own), answers Range requests with 206, unknown paths with 404, can
// redirect a path, break a response off after N bytes, and records every
// request. One connection at a time, closed after each answer.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace vit::testing {

class LoopbackHttpServer {
 public:
  struct Request {
    std::string path;
    std::string range;  // the Range header's value, "" when absent
    std::string method;
    std::string authorization;  // the Authorization header's value
  };

  LoopbackHttpServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(fd_, 8) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0)
      throw std::runtime_error("loopback server: cannot listen on 127.0.0.1");
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { loop(); });
  }
  ~LoopbackHttpServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  LoopbackHttpServer(const LoopbackHttpServer&) = delete;
  LoopbackHttpServer& operator=(const LoopbackHttpServer&) = delete;

  // `headers`: whole lines ("ETag: \"abc\"") sent with every answer for `path`.
  void serve(const std::string& path, const std::vector<uint8_t>& bytes,
             const std::vector<std::string>& headers = {}) {
    std::lock_guard<std::mutex> lock(mutex_);
    files_[path] = std::string(bytes.begin(), bytes.end());
    headers_[path] = headers;
  }
  // `path` answers 302 to `location`, with `headers`.
  void redirect(const std::string& path, const std::string& location,
                const std::vector<std::string>& headers = {}) {
    std::lock_guard<std::mutex> lock(mutex_);
    redirects_[path] = location;
    headers_[path] = headers;
  }
  // The next answer for `path` announces the whole length but sends only `bytes` of it.
  void break_off_next(const std::string& path, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    break_off_[path] = bytes;
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::vector<Request> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

 private:
  void loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int client = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      answer(client);
      ::close(client);
    }
  }

  static std::string header(const std::string& head, const std::string& name) {
    const auto at = head.find("\r\n" + name + ": ");
    if (at == std::string::npos) return "";
    const auto begin = at + name.size() + 4;
    return head.substr(begin, head.find("\r\n", begin) - begin);
  }

  void send_all(int client, const std::string& text) {
    size_t sent = 0;
    while (sent < text.size()) {
      const ssize_t n = ::send(client, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  }

  void answer(int client) {
    std::string head;
    char buffer[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(client, buffer, sizeof(buffer), 0);
      if (n <= 0) return;
      head.append(buffer, static_cast<size_t>(n));
    }
    const auto first_space = head.find(' ');
    const std::string method = head.substr(0, first_space);
    const std::string path =
        head.substr(first_space + 1, head.find(' ', first_space + 1) - first_space - 1);
    const std::string range = header(head, "Range");
    std::string body, own_headers, location;
    size_t limit = std::string::npos;
    bool found = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      requests_.push_back({path, range, method, header(head, "Authorization")});
      for (const auto& line : headers_[path])
        own_headers += line + "\r\n";
      if (auto r = redirects_.find(path); r != redirects_.end()) location = r->second;
      if (auto f = files_.find(path); f != files_.end()) {
        found = true;
        body = f->second;
      }
      if (auto b = break_off_.find(path); b != break_off_.end()) {
        limit = b->second;
        break_off_.erase(b);
      }
    }
    if (!location.empty()) {
      send_all(client, "HTTP/1.1 302 Found\r\nLocation: " + location + "\r\n" + own_headers +
                           "Content-Length: 0\r\nConnection: close\r\n\r\n");
      return;
    }
    if (!found) {
      send_all(client,
               "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found");
      return;
    }
    const size_t total = body.size();
    std::string status = "200 OK", extra;
    if (range.rfind("bytes=", 0) == 0) {
      const size_t from = std::stoull(range.substr(6));
      if (from >= total) {
        send_all(client,
                 "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Length: 0\r\n"
                 "Connection: close\r\n\r\n");
        return;
      }
      status = "206 Partial Content";
      extra = "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(total - 1) +
              "/" + std::to_string(total) + "\r\n";
      body = body.substr(from);
    }
    send_all(client, "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) +
                         "\r\n" + extra + own_headers + "Connection: close\r\n\r\n");
    if (method != "HEAD") send_all(client, limit < body.size() ? body.substr(0, limit) : body);
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::map<std::string, std::string> files_;
  std::map<std::string, size_t> break_off_;
  std::map<std::string, std::vector<std::string>> headers_;
  std::map<std::string, std::string> redirects_;
  std::vector<Request> requests_;
};

}  // namespace vit::testing
