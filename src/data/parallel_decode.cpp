#include "vit/data/parallel_decode.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "vit/error.hpp"
#include "vit/io/image_io.hpp"

namespace vit::data {
namespace fs = std::filesystem;

namespace {

// Images a worker claims at a time: large enough to keep the shared counter
// cold, small enough that the workers finish together.
constexpr int64_t kClaim = 64;
constexpr double kProgressEvery = 10.0;  // seconds between progress lines

}  // namespace

DecodedImages decode_images(const std::vector<fs::path>& files, int64_t channels, int64_t side,
                            bool skip_corrupt, int64_t workers) {
  const auto n = static_cast<int64_t>(files.size());
  if (workers <= 0) workers = std::max<int64_t>(2, std::thread::hardware_concurrency());
  workers = std::max<int64_t>(1, std::min(workers, (n + kClaim - 1) / kClaim));

  auto images = torch::empty({n, channels, side, side}, torch::kUInt8);
  const int64_t image_bytes = channels * side * side;
  std::vector<uint8_t> ok(n, 0);
  std::vector<std::string> errors(n);
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<bool> stop{false};

  auto work = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      const int64_t begin = next.fetch_add(kClaim);
      if (begin >= n) return;
      for (int64_t i = begin; i < std::min(begin + kClaim, n); ++i) {
        try {
          const auto image = io::read_image(files[i], channels, side).contiguous();
          std::memcpy(images.data_ptr<uint8_t>() + i * image_bytes, image.data_ptr<uint8_t>(),
                      image_bytes);
          ok[i] = 1;
        } catch (const std::exception& e) {
          errors[i] = e.what();
          if (!skip_corrupt) stop = true;
        }
      }
      done.fetch_add(std::min(kClaim, n - begin));
    }
  };

  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w)
    pool.emplace_back(work);
  auto last_report = start;
  while (done.load() < n && !stop.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_report).count() >= kProgressEvery) {
      spdlog::info("decoded {} of {} images", done.load(), n);
      last_report = now;
    }
  }
  for (auto& t : pool)
    t.join();

  DecodedImages out;
  for (int64_t i = 0; i < n; ++i) {
    if (ok[i]) {
      out.kept.push_back(i);
    } else if (!errors[i].empty()) {
      if (!skip_corrupt) {
        throw Error(errors[i] + " (set data.skip_corrupt=true to leave such files out)");
      }
      spdlog::warn("skipping {}", errors[i]);
      out.skipped.push_back(errors[i]);
    }
  }
  const auto kept = static_cast<int64_t>(out.kept.size());
  out.images = kept == n
                   ? images
                   : images.index_select(0, torch::tensor(out.kept, torch::kInt64).view({kept}));
  return out;
}

}  // namespace vit::data
