#include "vit/model/weight_substitution.hpp"

#include "vit/error.hpp"

namespace vit {
namespace {

thread_local const WeightMap* active_substitutes = nullptr;

}  // namespace

WeightSubstitution::WeightSubstitution(const WeightMap& substitutes) {
  if (active_substitutes) throw Error("internal: WeightSubstitution scopes do not nest");
  active_substitutes = &substitutes;
}

WeightSubstitution::~WeightSubstitution() {
  active_substitutes = nullptr;
}

const WeightMap* active_weight_substitutes() {
  return active_substitutes;
}

const at::Tensor& compute_weight(const at::Tensor& parameter) {
  if (!active_substitutes || !parameter.defined()) return parameter;
  const auto found = active_substitutes->find(parameter.unsafeGetTensorImpl());
  return found == active_substitutes->end() ? parameter : found->second;
}

}  // namespace vit
