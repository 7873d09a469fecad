// vit: train Vision Transformers and look inside them. The only place that
// catches exceptions: every error becomes one log line and a non-zero exit.
#include <exception>
#include <string>

#include <c10/util/Exception.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/cli.hpp"
#include "command_list.hpp"

int main(int argc, char** argv) {
  // Logs are for people and go to stderr; stdout holds --json output and tables.
  spdlog::set_default_logger(spdlog::stderr_color_mt("vit"));
  vit::cli::Cli cli;
  vit::cli::register_all_commands(cli);
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.app().exit(e);
  }
  try {
    return cli.run();
  } catch (const c10::Error& e) {
    // LibTorch's what() appends a C++ backtrace of many lines; its first line
    // without the backtrace says what went wrong.
    const std::string message = e.what_without_backtrace();
    spdlog::error("{}", message.substr(0, message.find('\n')));
    return 1;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  } catch (...) {
    spdlog::error("unknown error");
    return 1;
  }
}
