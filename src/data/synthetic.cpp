#include "vit/data/synthetic.hpp"

#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "vit/data/rng.hpp"
#include "vit/error.hpp"

namespace vit::data {

namespace {

constexpr uint64_t kSyntheticStream = 21;  // beside load.cpp's split streams (11..13)
constexpr int64_t kDefaultTrain = 10'000;
constexpr int64_t kDefaultTest = 1'000;

Dataset make_split(const SyntheticShape& shape, int64_t count, uint64_t seed, uint64_t split,
                   const std::vector<std::string>& classes, const char* name) {
  const int64_t bytes = shape.channels * shape.side * shape.side;
  auto images = torch::empty({count, shape.channels, shape.side, shape.side}, torch::kUInt8);
  auto labels = torch::empty({count}, torch::kInt64);
  uint8_t* pixels = images.data_ptr<uint8_t>();
  int64_t* label = labels.data_ptr<int64_t>();
  at::parallel_for(0, count, /*grain_size=*/16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      Rng rng = Rng::derive({seed, kSyntheticStream, split, static_cast<uint64_t>(i)});
      uint8_t* image = pixels + i * bytes;
      for (int64_t at = 0; at < bytes; at += 8) {
        const uint64_t word = rng.next();  // its bytes low first, whatever the host's byte order
        for (int64_t k = 0; k < 8 && at + k < bytes; ++k)
          image[at + k] = static_cast<uint8_t>(word >> (8 * k));
      }
      label[i] = static_cast<int64_t>(rng.below(static_cast<uint64_t>(shape.classes)));
    }
  });
  return Dataset{images, labels, classes, std::string("synthetic ") + name};
}

}  // namespace

DatasetPair make_synthetic(const SyntheticShape& shape, uint64_t seed) {
  if (shape.train < 1 || shape.test < 0 || shape.channels < 1 || shape.side < 1 ||
      shape.classes < 1) {
    throw Error(
        "synthetic data: needs at least one training image, one channel, one pixel and "
        "one class (got " +
        std::to_string(shape.train) + " train, " + std::to_string(shape.test) + " test, " +
        std::to_string(shape.channels) + "x" + std::to_string(shape.side) + "x" +
        std::to_string(shape.side) + ", " + std::to_string(shape.classes) + " classes)");
  }
  std::vector<std::string> classes;
  for (int64_t k = 0; k < shape.classes; ++k)
    classes.push_back(std::to_string(k));
  return {make_split(shape, shape.train, seed, /*split=*/0, classes, "train"),
          make_split(shape, shape.test, seed, /*split=*/1, classes, "test")};
}

SyntheticShape synthetic_shape(int64_t limit_train, int64_t val_size, int64_t limit_test,
                               int64_t channels, int64_t side, int64_t classes) {
  SyntheticShape shape;
  shape.train = (limit_train > 0 ? limit_train : kDefaultTrain) + val_size;
  shape.test = limit_test > 0 ? limit_test : kDefaultTest;
  shape.channels = channels;
  shape.side = side;
  shape.classes = classes;
  return shape;
}

}  // namespace vit::data
