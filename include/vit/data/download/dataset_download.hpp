#pragma once
// Puts a dataset's official files into data.root: download (resumable),
// verify the checksum, unpack beside data.root, move into place.
#include "vit/config.hpp"

namespace vit::data {

// Downloads data.dataset's archive (dataset_archives.hpp, or data.url) into
// data.root; false, touching nothing, when data.root already holds every file the
// reader needs. Otherwise:
//  1. the files are fetched into <parent of root>/.vit-download-<root's name>/
//     (a broken transfer is resumed by the next call);
//  2. each is checked against its published MD5, or data.sha256 with data.url
//     (without it, its SHA-256 is printed with a warning); a failing file is deleted;
//  3. the archive is unpacked there (archive_unpack.hpp), checked to hold the
//     reader's files, and moved to data.root in one step.
// data.root is either complete or as it was: a vit::Error says what failed. A
// data.root that exists, not empty and incomplete, is an error too. Concurrent
// calls for one data.root take turns.
bool download_dataset(const DataConfig& data);

}  // namespace vit::data
