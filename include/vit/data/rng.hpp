#pragma once
// A small splitmix64 random stream for the data pipeline. Shuffles, splits
// and augmentation draw from it so that their results are a pure function of
// the seeds they were given: the same on every platform and LibTorch version,
// which is what lets training resume at (epoch, step) with the same batches.
#include <cstdint>
#include <initializer_list>

namespace vit::data {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  // A stream for one purpose, e.g. Rng::derive({seed, kShuffle, epoch}).
  static Rng derive(std::initializer_list<uint64_t> keys);

  uint64_t next();                  // splitmix64
  double uniform();                 // [0, 1), 53 bits
  uint64_t below(uint64_t n);       // [0, n), unbiased; n > 0
  double beta(double a, double b);  // Beta(a, b) via two gamma draws; a, b > 0

 private:
  double gamma(double shape);  // Marsaglia-Tsang, shape > 0
  double normal();
  uint64_t state_;
};

}  // namespace vit::data
