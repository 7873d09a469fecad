#pragma once
#include "cli/cli.hpp"

namespace vit::cli {

struct ReportOptions {
  CommonOptions common;
  std::string run = "runs/latest";  // --run DIR: a finished training run
  int64_t samples = 8;              // --samples N: images for rollout and saliency
};

std::shared_ptr<ReportOptions> register_report(Cli& cli);
int run_report(const ReportOptions& o);

}  // namespace vit::cli
