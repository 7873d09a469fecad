#include "vit/data/image_listing.hpp"

#include <chrono>

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include "vit/data/image_cache.hpp"
#include "vit/data/parallel_decode.hpp"
#include "vit/error.hpp"

namespace vit::data {
namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Splits the decoded images back into train and test, dropping skipped ones.
DatasetPair assemble(const ImageListing& listing, const DecodedImages& decoded) {
  const int64_t n_train = listing.train.size();
  std::vector<int64_t> train_rows, test_rows, train_labels, test_labels;
  for (size_t row = 0; row < decoded.kept.size(); ++row) {
    const int64_t i = decoded.kept[row];
    if (i < n_train) {
      train_rows.push_back(static_cast<int64_t>(row));
      train_labels.push_back(listing.train.label(i));
    } else {
      test_rows.push_back(static_cast<int64_t>(row));
      test_labels.push_back(listing.evaluation.label(i - n_train));
    }
  }
  auto split = [&](const std::vector<int64_t>& rows, const std::vector<int64_t>& labels,
                   const std::string& which) {
    const auto n = static_cast<int64_t>(rows.size());
    Dataset d;
    d.images = decoded.images.index_select(0, torch::tensor(rows, torch::kInt64).view({n}));
    d.labels = torch::tensor(labels, torch::kInt64).view({n});
    d.classes = listing.classes;
    d.source = listing.root.string() + " (" + which + ")";
    return d;
  };
  return {split(train_rows, train_labels, "train"), split(test_rows, test_labels, "test")};
}

// The images, training files first.
std::vector<fs::path> image_paths(const ImageListing& listing) {
  std::vector<fs::path> files = listing.train.paths();
  for (auto& file : listing.evaluation.paths())
    files.push_back(std::move(file));
  return files;
}

DatasetPair from_cache(CachedImages cached, const fs::path& file, bool skip_corrupt) {
  if (!cached.skipped.empty()) {
    if (!skip_corrupt) {
      throw Error(cached.skipped.front() + " (recorded in the cache " + file.string() +
                  "; set data.skip_corrupt=true to leave such files out)");
    }
    spdlog::warn("{} images were left out when the cache was built, e.g. {}", cached.skipped.size(),
                 cached.skipped.front());
  }
  return std::move(cached.data);
}

}  // namespace

DatasetPair load_listing(const ImageListing& listing, const ImageLoadOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::string recipe = listing.name + " channels=" + std::to_string(listing.channels) +
                             " side=" + std::to_string(listing.side);
  const auto images = image_paths(listing);
  std::vector<fs::path> sources = listing.index_files;
  sources.insert(sources.end(), images.begin(), images.end());
  const SourceFingerprint fingerprint = fingerprint_sources(listing.root, sources, recipe);
  const fs::path beside = image_cache_path(listing.root, listing.name, options.cache_dir, false);
  const fs::path elsewhere = image_cache_path(listing.root, listing.name, options.cache_dir, true);

  if (options.use_cache) {
    for (const auto& file : {beside, elsewhere}) {
      std::string why_not;
      if (auto cached = read_image_cache(file, fingerprint, &why_not)) {
        spdlog::info("read {} images from the cache {} in {:.2f} s",
                     cached->data.train.size() + cached->data.test.size(), file.string(),
                     seconds_since(start));
        return from_cache(std::move(*cached), file, options.skip_corrupt);
      }
      if (why_not != "no cache file")
        spdlog::info("rebuilding the cache {}: {}", file.string(), why_not);
    }
  }

  spdlog::info("decoding {} images in {}", images.size(), listing.root.string());
  const DecodedImages decoded =
      decode_images(images, listing.channels, listing.side, options.skip_corrupt, options.workers);
  CachedImages cached{assemble(listing, decoded), decoded.skipped};
  spdlog::info("decoded {} images in {:.1f} s", decoded.kept.size(), seconds_since(start));

  if (options.use_cache) {
    // Beside the data when the folder is writable, else in the cache folder.
    bool written = false;
    for (const auto& file : {beside, elsewhere}) {
      try {
        write_image_cache(file, fingerprint, cached);
        spdlog::info("wrote the cache {}", file.string());
        written = true;
        break;
      } catch (const Error& e) {
        spdlog::debug("{}", e.what());
      }
    }
    if (!written)
      spdlog::warn("could not write a cache for {}; the next load decodes again",
                   listing.root.string());
  }
  return std::move(cached.data);
}

}  // namespace vit::data
