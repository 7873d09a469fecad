#pragma once
// Digests of downloaded files, through OpenSSL's libcrypto (EVP): MD5, the sum
// the datasets' authors publish, SHA-256 for data.sha256 and the hub's large
// files, and SHA-1 for the hub's small files (git's blob hash).
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

namespace vit::data {

enum class DigestKind { kMd5, kSha1, kSha256 };

// "MD5", "SHA-1" or "SHA-256", for messages.
const char* digest_name(DigestKind kind);

// A digest fed piece by piece.
class Digest {
 public:
  explicit Digest(DigestKind kind);
  ~Digest();
  Digest(const Digest&) = delete;
  Digest& operator=(const Digest&) = delete;

  void update(const void* data, size_t size);
  // The digest in lower-case hexadecimal; the Digest is spent after it.
  std::string hex();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

// The digest of `prefix` and then a whole file (git's blob hash: "blob SIZE\0"
// and the bytes); a vit::Error names a file that cannot be read.
std::string file_digest(const std::filesystem::path& file, DigestKind kind,
                        const std::string& prefix = "");

}  // namespace vit::data
