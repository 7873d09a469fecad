#pragma once
// One CSV field as RFC 4180 writes it: quoted when it holds a comma, a double
// quote or a line break, with its double quotes doubled. Image paths and class
// names from users can hold any of them.
#include <string>

namespace vit::io {

std::string csv_field(const std::string& text);

}  // namespace vit::io
