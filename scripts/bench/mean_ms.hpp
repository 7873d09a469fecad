#pragma once
// The benchmarks' timer: mean milliseconds of `calls` calls of f, after
// `warmup` untimed ones.
#include <chrono>

template <class F>
double mean_ms(F f, int calls, int warmup) {
  for (int i = 0; i < warmup; ++i)
    f();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i)
    f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count() /
         calls;
}
