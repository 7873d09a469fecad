#pragma once
// Puts a dataset's official files into data.root: download (resumable),
// verify the checksum, unpack beside data.root, move into place.
#include "vit/config.hpp"

namespace vit::data {

// Downloads data.dataset's archive (data/download/dataset_archives.hpp, or data.url)
// into data.root unless data.root already holds every file the reader needs;
// then nothing is touched, and false is returned. Otherwise, in order:
//  1. the files are fetched into <parent of root>/.vit-download-<root's name>/
//     (a broken transfer is resumed by the next call);
//  2. each is checked against its published MD5, or against data.sha256 when
//     data.url is given (without data.sha256 its SHA-256 is printed with a
//     warning that it was not verified); a file that fails is deleted;
//  3. the archive is unpacked into that folder (untrusted: see
//     archive_unpack.hpp; at most kUnpackFactor times the dataset's size),
//     checked to hold the reader's files, and moved to data.root in one step.
// data.root is either complete or as it was, whatever fails: a vit::Error
// says what. A data.root that exists and is incomplete (not empty) is an
// error too: its files are the user's. Concurrent calls for one data.root
// take turns (a lock file in the download folder).
bool download_dataset(const DataConfig& data);

}  // namespace vit::data
