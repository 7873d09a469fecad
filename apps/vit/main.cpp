// vit: train Vision Transformers and look inside them. The only place that
// catches exceptions: every error becomes one log line and a non-zero exit.
#include <exception>

#include <spdlog/spdlog.h>

#include "cli.hpp"

int main(int argc, char** argv) {
  vit::cli::Cli cli;
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.app().exit(e);
  }
  try {
    return cli.run();
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  } catch (...) {
    spdlog::error("unknown error");
    return 1;
  }
}
