#pragma once
// Bytes compressed in memory with zlib's deflate, as a gzip file or as the raw
// stream that a zip entry holds: the fuzz seeds (make_seeds.cpp), the IDX
// harness (entry_points.cpp) and the download and zip tests compress with it.
#include <zlib.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace vit::fuzz {

enum class DeflateWrapper { kGzip, kRaw };

inline std::vector<uint8_t> deflated(const void* data, size_t size, DeflateWrapper wrapper,
                                     int level = Z_BEST_COMPRESSION) {
  // zlib's window bits: 15 + 16 writes a gzip header and trailer, -15 none.
  const int window_bits = wrapper == DeflateWrapper::kGzip ? MAX_WBITS + 16 : -MAX_WBITS;
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2 failed");
  std::vector<uint8_t> out(deflateBound(&z, size) + 64);  // + gzip's header and trailer
  z.next_in = static_cast<Bytef*>(const_cast<void*>(data));
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (status != Z_STREAM_END) throw std::runtime_error("deflate did not finish its stream");
  return out;
}

}  // namespace vit::fuzz
