#pragma once
// Child processes for end-to-end tests that need more than std::system: an
// environment of their own (torchrun's variables), a working folder, output
// to a file, a deadline, and signals.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace vit::testing {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with this process's environment plus `extra_env`
  // ("NAME=value", later entries win), in `cwd`, stdout and stderr to `log`.
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
               const std::filesystem::path& cwd, const std::filesystem::path& log)
      : log_(log) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string entry = *e;
      const auto name = entry.substr(0, entry.find('=') + 1);
      bool replaced = false;
      for (const auto& extra : extra_env)
        replaced = replaced || extra.rfind(name, 0) == 0;
      if (!replaced) env.push_back(entry);
    }
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    // Everything the child needs is prepared before fork(): between fork and
    // exec only async-signal-safe calls are allowed.
    std::vector<char*> args, envp;
    for (const auto& a : argv)
      args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const auto& e : env)
      envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const std::string dir = cwd.string(), out = log.string();
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || ::chdir(dir.c_str()) != 0) ::_exit(127);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::setpgid(0, 0);  // its own group, so a kill reaches its children too
      ::execve(args[0], args.data(), envp.data());
      ::_exit(127);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() {
    if (pid_ > 0 && !done_) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }
  void signal(int number) const { ::kill(pid_, number); }

  // The exit code, 128 + N for death by signal N, or -1 if it is still
  // running after `timeout` (then it is killed).
  int wait(std::chrono::seconds timeout) {
    if (done_) return status_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(-pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        done_ = true;
        status_ = -1;
        return status_;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    done_ = true;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return status_;
  }

  std::string output() const {
    std::ifstream in(log_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
  bool done_ = false;
  int status_ = 0;
};

// A TCP port nobody listens on now (the kernel's choice for port 0).
inline int free_tcp_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    port = ntohs(address.sin_port);
  ::close(fd);
  return port;
}

}  // namespace vit::testing
