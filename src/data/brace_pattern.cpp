#include "vit/data/brace_pattern.hpp"

#include <charconv>
#include <cstdint>
#include <system_error>

#include "vit/error.hpp"

namespace vit::data {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxBraceNames = 1000000;

[[noreturn]] void bad_pattern(const std::string& pattern, const std::string& why) {
  throw Error("pattern '" + pattern + "': " + why);
}

// "000146" -> 146; nullopt-like false for anything but digits or a value
// past uint64's range.
bool parse_bound(const std::string& text, uint64_t& value) {
  if (text.empty()) return false;
  for (const char c : text)
    if (c < '0' || c > '9') return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

// The names one pair of braces stands for; `body` is what lies between them.
std::vector<std::string> alternatives(const std::string& pattern, const std::string& body,
                                      size_t offset) {
  const auto dots = body.find("..");
  if (dots != std::string::npos) {
    const std::string first = body.substr(0, dots), last = body.substr(dots + 2);
    uint64_t low = 0, high = 0;
    if (!parse_bound(first, low) || !parse_bound(last, high))
      bad_pattern(pattern, "the range {" + body +
                               "} needs two non-negative integers, e.g. {000000..000146}");
    if (low > high)
      bad_pattern(pattern, "the range {" + body + "} descends, expected FIRST <= LAST");
    if (high - low >= kMaxBraceNames)
      bad_pattern(pattern, "stands for more than " + std::to_string(kMaxBraceNames) + " names");
    // The first bound's width is the names' width: {000000..000146} gives
    // "000000", ..., "000146", as webdataset's shards are named.
    const size_t width = first.size();
    std::vector<std::string> names;
    names.reserve(static_cast<size_t>(high - low + 1));
    for (uint64_t i = low;; ++i) {
      std::string digits = std::to_string(i);
      if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
      names.push_back(std::move(digits));
      if (i == high) break;
    }
    return names;
  }
  if (body.empty())
    bad_pattern(pattern, "the braces at offset " + std::to_string(offset) +
                             " are empty, expected a list {a,b} or a range {0..9}");
  std::vector<std::string> names;
  size_t start = 0;
  for (;;) {
    const auto comma = body.find(',', start);
    names.push_back(body.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

}  // namespace

std::vector<std::string> expand_braces(const std::string& pattern) {
  // The pattern as literal text and brace groups in turn, each a list of
  // alternatives (a literal is a list of one).
  std::vector<std::vector<std::string>> pieces;
  size_t total = 1;
  std::string literal;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '}') bad_pattern(pattern, "the '}' at offset " + std::to_string(i) + " closes no '{'");
    if (c != '{') {
      literal += c;
      continue;
    }
    const auto close = pattern.find_first_of("{}", i + 1);
    if (close == std::string::npos || pattern[close] == '{')
      bad_pattern(
          pattern,
          "the '{' at offset " + std::to_string(i) + " has no '}'" +
              (close == std::string::npos ? "" : " before the next '{' (braces do not nest)"));
    pieces.push_back({literal});
    literal.clear();
    pieces.push_back(alternatives(pattern, pattern.substr(i + 1, close - i - 1), i));
    // Checked piece by piece, so the product never overflows.
    total *= pieces.back().size();
    if (total > kMaxBraceNames)
      bad_pattern(pattern, "stands for more than " + std::to_string(kMaxBraceNames) + " names");
    i = close;
  }
  pieces.push_back({literal});

  // The cartesian product, the rightmost piece fastest: an odometer over the pieces.
  std::vector<std::string> names;
  names.reserve(total);
  std::vector<size_t> at(pieces.size(), 0);
  for (;;) {
    std::string name;
    for (size_t p = 0; p < pieces.size(); ++p)
      name += pieces[p][at[p]];
    names.push_back(std::move(name));
    size_t p = pieces.size();
    while (p > 0 && ++at[p - 1] == pieces[p - 1].size())
      at[--p] = 0;
    if (p == 0) break;
  }
  return names;
}

// A pattern that matches no file at all says so ("matches nothing under ROOT");
// `key` also opens expand_braces' errors.
std::vector<fs::path> shard_files(const std::string& pattern, const fs::path& root,
                                  const std::string& key) {
  std::vector<std::string> names;
  try {
    names = expand_braces(pattern);
  } catch (const Error& e) {
    throw Error(key + ": " + e.what());
  }
  std::vector<fs::path> files;
  files.reserve(names.size());
  std::string first_missing;
  for (const auto& name : names) {
    const fs::path file = fs::path(name).is_absolute() ? fs::path(name) : root / name;
    std::error_code ec;
    if (first_missing.empty() && !fs::is_regular_file(file, ec)) first_missing = file.string();
    files.push_back(file);
  }
  if (first_missing.empty()) return files;
  size_t found = 0;
  for (const auto& file : files) {
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) ++found;
  }
  const std::string where = fs::path(pattern).is_absolute() ? "" : " under " + root.string();
  if (found == 0) throw Error(key + ": '" + pattern + "' matches nothing" + where);
  throw Error(key + ": '" + pattern + "' names " + first_missing +
              ", which is missing or not a file (" + std::to_string(found) + " of its " +
              std::to_string(files.size()) + " files exist)");
}

}  // namespace vit::data
