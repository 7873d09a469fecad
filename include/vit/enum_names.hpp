#pragma once
// The names of a fixed-choice setting or flag, in one table per enum: the one
// place where a setting's text meets its enum. Code compares the enums.
//
//   template <> struct EnumNames<Pool> {
//     static constexpr std::pair<Pool, const char*> table[] = {{Pool::kCls, "cls"}, ...};
//   };
//   enum_named<Pool>("mean", "model.pool")  ->  Pool::kMean
#include <optional>
#include <string>
#include <utility>

#include "vit/error.hpp"

namespace vit {

// Specialised next to each enum, its names in the order errors list them.
template <typename E>
struct EnumNames;

template <typename E>
const char* enum_name(E value) {
  for (const auto& [v, name] : EnumNames<E>::table)
    if (v == value) return name;
  return "?";
}

// "a | b | c"
template <typename E>
std::string enum_choices() {
  std::string out;
  for (const auto& [v, name] : EnumNames<E>::table)
    out += (out.empty() ? "" : " | ") + std::string(name);
  return out;
}

template <typename E>
std::optional<E> enum_from_name(const std::string& name) {
  for (const auto& [v, n] : EnumNames<E>::table)
    if (name == n) return v;
  return std::nullopt;
}

// The value `name` stands for, or an error naming `what` (a config key or a
// flag) and the choices: "invalid config: model.pool is 'max', expected cls | mean".
template <typename E>
E enum_named(const std::string& name, const std::string& what,
             const std::string& prefix = "invalid config: ") {
  if (const auto value = enum_from_name<E>(name)) return *value;
  throw Error(prefix + what + " is '" + name + "', expected " + enum_choices<E>());
}

}  // namespace vit
