#include "vit/data/download/dataset_archives.hpp"

#include <system_error>

#include "vit/data/idx.hpp"

namespace vit::data {

namespace fs = std::filesystem;

namespace {

// The four IDX files of MNIST and Fashion-MNIST, in the order of data.sha256.
const char* const kIdxStems[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                 "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

std::vector<DownloadFile> idx_files(const std::vector<std::string>& md5) {
  std::vector<DownloadFile> files;
  for (size_t i = 0; i < md5.size(); ++i)
    files.push_back({std::string(kIdxStems[i]) + ".gz", md5[i]});
  return files;
}

}  // namespace

std::optional<DatasetArchive> official_archive(DatasetKind dataset) {
  switch (dataset) {
    case DatasetKind::kCifar10:
      return DatasetArchive{dataset,
                            "https://www.cs.toronto.edu/~kriz/",
                            {{"cifar-10-binary.tar.gz", "c32a1d4ab5d03f1284b67883e8d87530"}},
                            ArchiveLayout::kTarGz,
                            "cifar-10-batches-bin",
                            184'500'000};
    case DatasetKind::kCifar100:
      return DatasetArchive{dataset,
                            "https://www.cs.toronto.edu/~kriz/",
                            {{"cifar-100-binary.tar.gz", "03b5dce01913d631647c71ecec9e9cb8"}},
                            ArchiveLayout::kTarGz,
                            "cifar-100-binary",
                            184'500'000};
    case DatasetKind::kMnist:
      return DatasetArchive{
          dataset,
          "https://ossci-datasets.s3.amazonaws.com/mnist/",
          idx_files({"f68b3c2dcbeaaa9fbdd348bbdeb94873", "d53e105ee54ea40749a09fcbcd1e9432",
                     "9fb629c4189551a2d022fa330f9573f3", "ec29112dd5afa0611ce80d1b7f02629c"}),
          ArchiveLayout::kGzFiles,
          "",
          11'600'000};
    case DatasetKind::kFashionMnist:
      return DatasetArchive{
          dataset,
          "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
          idx_files({"8d4fb7e6c68d591d4c3dfef9ec88bf0d", "25c81989df183df01b3e8a0aad5dffbe",
                     "bef4ecab320f06d8554ea6380940ec79", "bb300cfdad3c16e7a12a480ee83cd310"}),
          ArchiveLayout::kGzFiles,
          "",
          30'900'000};
    case DatasetKind::kTinyImagenet:
      return DatasetArchive{dataset,
                            "http://cs231n.stanford.edu/",
                            {{"tiny-imagenet-200.zip", "90528d7ca1a48142e341f4ef8d21d0de"}},
                            ArchiveLayout::kZip,
                            "tiny-imagenet-200",
                            260'000'000};
    case DatasetKind::kImageFolder:
    case DatasetKind::kSynthetic:
    case DatasetKind::kWebdataset:
      return std::nullopt;
  }
  return std::nullopt;
}

std::string missing_file(DatasetKind dataset, const fs::path& root) {
  std::vector<std::string> files, folders;
  switch (dataset) {
    case DatasetKind::kCifar10:
      files = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
               "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
      break;
    case DatasetKind::kCifar100:
      files = {"train.bin", "test.bin"};
      break;
    case DatasetKind::kMnist:
    case DatasetKind::kFashionMnist:
      for (const char* stem : kIdxStems)
        if (idx_file_or_empty(root, stem).empty()) return std::string(stem) + "[.gz]";
      return "";
    case DatasetKind::kTinyImagenet:
      files = {"wnids.txt", "val/val_annotations.txt"};
      folders = {"train", "val/images"};
      break;
    case DatasetKind::kImageFolder:
      folders = {"."};
      break;
    case DatasetKind::kSynthetic:   // made in memory
    case DatasetKind::kWebdataset:  // its shards are named by brace patterns, checked on reading
      return "";
  }
  std::error_code ec;
  for (const auto& f : files)
    if (!fs::is_regular_file(root / f, ec)) return f;
  for (const auto& f : folders)
    if (!fs::is_directory(root / f, ec)) return f == "." ? root.string() : f + "/";
  return "";
}

}  // namespace vit::data
