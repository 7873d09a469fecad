#include "vit/data/download/checksum.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include <openssl/evp.h>

#include "vit/error.hpp"

namespace vit::data {

struct Digest::Context {
  EVP_MD_CTX* ctx = nullptr;
  ~Context() { EVP_MD_CTX_free(ctx); }
};

const char* digest_name(DigestKind kind) {
  switch (kind) {
    case DigestKind::kMd5:
      return "MD5";
    case DigestKind::kSha1:
      return "SHA-1";
    case DigestKind::kSha256:
      break;
  }
  return "SHA-256";
}

Digest::Digest(DigestKind kind) : context_(std::make_unique<Context>()) {
  context_->ctx = EVP_MD_CTX_new();
  const EVP_MD* md = kind == DigestKind::kMd5    ? EVP_md5()
                     : kind == DigestKind::kSha1 ? EVP_sha1()
                                                 : EVP_sha256();
  if (!context_->ctx || EVP_DigestInit_ex(context_->ctx, md, nullptr) != 1)
    throw Error(std::string("cannot start an ") + digest_name(kind) + " digest (libcrypto)");
}

Digest::~Digest() = default;

void Digest::update(const void* data, size_t size) {
  if (EVP_DigestUpdate(context_->ctx, data, size) != 1)
    throw Error("digest update failed (libcrypto)");
}

std::string Digest::hex() {
  unsigned char sum[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context_->ctx, sum, &length) != 1)
    throw Error("digest final failed (libcrypto)");
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += digits[sum[i] >> 4];
    out += digits[sum[i] & 15];
  }
  return out;
}

std::string file_digest(const std::filesystem::path& file, DigestKind kind,
                        const std::string& prefix) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file.string() + ": cannot open for reading (" + std::strerror(errno) + ")");
  Digest digest(kind);
  digest.update(prefix.data(), prefix.size());
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    digest.update(buffer.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw Error(file.string() + ": read failed");
  return digest.hex();
}

}  // namespace vit::data
