#pragma once
// CIFAR-10 and CIFAR-100 in their official binary layout
// (https://www.cs.toronto.edu/~kriz/cifar.html): records of label byte(s)
// followed by 3072 pixel bytes, the R, G and B planes of 32 x 32, row-major.
#include <filesystem>
#include <string>
#include <vector>

#include "vit/data/dataset.hpp"

namespace vit::data {

enum class CifarKind {
  kCifar10,   // 1 label byte; data_batch_{1..5}.bin, test_batch.bin, batches.meta.txt
  kCifar100,  // 2 label bytes (coarse, fine); train.bin, test.bin, fine_label_names.txt
};

// One batch file. Its size must be a whole number of records and every label
// in range; the fine label is used for CIFAR-100. `classes` is copied as is.
Dataset read_cifar_file(const std::filesystem::path& file, CifarKind kind,
                        const std::vector<std::string>& classes);

// Class names from batches.meta.txt / fine_label_names.txt in `root`, or the
// official names when that file is absent.
std::vector<std::string> cifar_class_names(const std::filesystem::path& root, CifarKind kind);

// The official training files joined, and the test file.
DatasetPair load_cifar(const std::filesystem::path& root, CifarKind kind);

}  // namespace vit::data
