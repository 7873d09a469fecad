#include "vit/data/idx.hpp"

#include <vector>

#include <torch/torch.h>

#include "vit/data/file_bytes.hpp"
#include "vit/error.hpp"

namespace vit::data {
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
constexpr uint32_t kMaxImageSide = 65536;

uint32_t big_endian_u32(const uint8_t* bytes) {
  return (uint32_t{bytes[0]} << 24) | (uint32_t{bytes[1]} << 16) | (uint32_t{bytes[2]} << 8) |
         uint32_t{bytes[3]};
}

struct IdxData {
  std::vector<int64_t> sizes;   // the dimensions
  std::vector<uint8_t> values;  // their product of bytes
};

// Reads the header of an IDX file with `dims` dimensions, checks that the file
// can hold the payload it claims before allocating for it, then reads it and
// checks that exactly that much follows.
IdxData read_idx(const fs::path& file, uint32_t magic, size_t dims, const char* what) {
  const std::string where = file.filename().string();
  MaybeGzippedFile in(file);
  const size_t header = 4 * (1 + dims);
  uint8_t head[16] = {};
  const size_t got = in.read(head, header);
  if (got < 4) {
    throw Error(where + ": " + std::to_string(got) +
                " bytes is too short for an IDX header (4-byte magic number)");
  }
  const uint32_t found = big_endian_u32(head);
  if (found != magic) {
    throw Error(where + ": bad magic number " + std::to_string(found) + ", expected " +
                std::to_string(magic) + " (IDX " + what + " file)");
  }
  if (got < header) {
    throw Error(where + ": " + std::to_string(got) + " bytes is too short for the " +
                std::to_string(header) + "-byte IDX " + what + " header");
  }
  IdxData out;
  unsigned __int128 payload = 1;  // at most three 32-bit factors: cannot overflow
  std::string shape;
  for (size_t d = 0; d < dims; ++d) {
    const uint32_t n = big_endian_u32(head + 4 * (1 + d));
    if (d > 0 && n == 0) throw Error(where + ": dimension " + std::to_string(d) + " is 0");
    // An image side past this is no image; LibTorch cannot even describe an
    // empty tensor of such sides (its strides overflow; found by fuzz_idx).
    if (d > 0 && n > kMaxImageSide) {
      throw Error(where + ": dimension " + std::to_string(d) + " is " + std::to_string(n) +
                  ", more than the " + std::to_string(kMaxImageSide) +
                  " pixels an image side may have");
    }
    out.sizes.push_back(n);
    payload *= n;
    shape += (d ? " x " : "") + std::to_string(n);
  }
  const auto mismatch = [&](uint64_t available, bool at_least) {
    const std::string expected =
        payload > UINT64_MAX ? "more" : std::to_string(static_cast<uint64_t>(payload));
    return Error(where + ": " + (payload > available ? "truncated, " : "trailing data, ") +
                 (at_least ? "more than " : "") + std::to_string(available) + " bytes after the " +
                 std::to_string(header) + "-byte header, expected " + expected + " (" + shape +
                 ")");
  };
  if (!in.gzipped() && payload != in.file_size() - header)
    throw mismatch(in.file_size() - header, false);
  if (payload > in.max_data_bytes()) {
    throw Error(where + ": the header claims " + shape + " = " +
                (payload > UINT64_MAX ? std::string("more than 2^64")
                                      : std::to_string(static_cast<uint64_t>(payload))) +
                " bytes, more than a gzip file of " + std::to_string(in.file_size()) +
                " bytes can hold");
  }
  out.values.resize(static_cast<size_t>(payload));
  const size_t read = in.read(out.values.data(), out.values.size());
  if (read < out.values.size()) throw mismatch(read, false);
  constexpr uint64_t kCountCap = uint64_t{1} << 20;
  const uint64_t rest = in.count_rest(kCountCap);
  if (rest > 0) throw mismatch(read + rest, rest > kCountCap);
  return out;
}

}  // namespace

at::Tensor read_idx_images(const fs::path& file) {
  IdxData idx = read_idx(file, kImagesMagic, 3, "images");
  const int64_t n = idx.sizes[0], h = idx.sizes[1], w = idx.sizes[2];
  return torch::from_blob(idx.values.data(), {n, 1, h, w}, torch::kUInt8).clone();  // (N, 1, H, W)
}

at::Tensor read_idx_labels(const fs::path& file) {
  IdxData idx = read_idx(file, kLabelsMagic, 1, "labels");
  return torch::from_blob(idx.values.data(), {idx.sizes[0]}, torch::kUInt8).to(torch::kInt64);
}

fs::path idx_file_or_empty(const fs::path& root, const std::string& stem) {
  std::string dotted = stem;
  dotted[dotted.rfind('-', dotted.find("idx"))] = '.';
  for (const auto& name : {stem, stem + ".gz", dotted, dotted + ".gz"}) {
    std::error_code ec;
    if (fs::is_regular_file(root / name, ec)) return root / name;
  }
  return {};
}

fs::path find_idx_file(const fs::path& root, const std::string& stem) {
  if (auto file = idx_file_or_empty(root, stem); !file.empty()) return file;
  throw Error((root / stem).string() +
              "[.gz]: file not found (MNIST-style data needs "
              "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
              "t10k-labels-idx1-ubyte, gzipped or not, in data.root)");
}

DatasetPair load_mnist(const fs::path& root, DatasetKind dataset) {
  std::vector<std::string> classes;
  if (dataset == DatasetKind::kFashionMnist) {
    classes = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
               "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  } else if (dataset == DatasetKind::kMnist) {
    for (int d = 0; d < 10; ++d)
      classes.push_back(std::to_string(d));
  } else {
    throw Error(std::string("load_mnist: dataset ") + enum_name(dataset) +
                " is not mnist or fashion-mnist");
  }
  auto read_split = [&](const std::string& prefix) {
    const fs::path images_file = find_idx_file(root, prefix + "-images-idx3-ubyte");
    const fs::path labels_file = find_idx_file(root, prefix + "-labels-idx1-ubyte");
    Dataset split;
    split.images = read_idx_images(images_file);
    split.labels = read_idx_labels(labels_file);
    if (split.images.size(0) != split.labels.size(0)) {
      throw Error(labels_file.filename().string() + ": " + std::to_string(split.labels.size(0)) +
                  " labels but " + images_file.filename().string() + " has " +
                  std::to_string(split.images.size(0)) + " images");
    }
    class_counts(split.labels, 10, labels_file.filename().string());
    split.classes = classes;
    split.source = images_file.string();
    return split;
  };
  return {read_split("train"), read_split("t10k")};
}

}  // namespace vit::data
