#include "vit/data/rng.hpp"

#include <cmath>

namespace vit::data {

Rng Rng::derive(std::initializer_list<uint64_t> keys) {
  // Chain each key through splitmix64's finaliser so (1, 2) and (2, 1) differ.
  uint64_t state = 0x243f6a8885a308d3ULL;
  for (uint64_t key : keys)
    state = Rng(state ^ key).next();
  return Rng(state);
}

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;
}

uint64_t Rng::below(uint64_t n) {
  // Rejection keeps every value equally likely (Lemire's bound).
  const uint64_t limit = -n % n;
  while (true) {
    const uint64_t x = next();
    if (x >= limit) return x % n;
  }
}

double Rng::normal() {
  // Box-Muller; 1 - u keeps the logarithm finite.
  const double u = 1.0 - uniform();
  const double v = uniform();
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
}

double Rng::gamma(double shape) {
  if (shape < 1.0) {
    // Boost to shape + 1, then scale back: Gamma(a) = Gamma(a + 1) * U^(1/a).
    return gamma(shape + 1.0) * std::pow(1.0 - uniform(), 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x = normal();
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = 1.0 - uniform();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

double Rng::beta(double a, double b) {
  const double x = gamma(a);
  const double y = gamma(b);
  return x / (x + y);
}

}  // namespace vit::data
