#pragma once
// Deterministic, stratified subsets: the validation hold-out and the
// limit_train / limit_test smoke-run subsets all come from stratified_pick.
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace vit::data {

struct Picked {
  at::Tensor picked;  // int64 indices, ascending
  at::Tensor rest;    // int64 indices, ascending; picked and rest partition [0, N)
};

// Chooses `count` of the N labelled items so that every class keeps its share:
// class k gets floor(count * n_k / N) items, and the remaining ones go to the
// classes with the largest fractional parts (ties broken by a seeded
// shuffle of the classes).
// Which items of a class are chosen is a seeded shuffle, so the result is a
// pure function of (labels, count, seed). Throws if count > N.
Picked stratified_pick(const at::Tensor& labels, int64_t num_classes, int64_t count, uint64_t seed);

}  // namespace vit::data
