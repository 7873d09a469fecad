#include "vit/data/download/download.hpp"

#include <curl/curl.h>
#include <unistd.h>

#include <cctype>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "vit/atomic_write.hpp"
#include "vit/data/download/download_progress.hpp"
#include "vit/error.hpp"

namespace vit::data {

namespace fs = std::filesystem;

namespace {

constexpr long kConnectTimeoutS = 30;
constexpr long kStallTimeoutS = 60;  // a transfer with no byte for this long is broken off

struct Transfer {
  CURL* curl = nullptr;
  fs::path part;
  uint64_t offset = 0;   // bytes the part held before this transfer
  uint64_t written = 0;  // bytes written by this transfer
  long status = 0;
  bool opened = false;
  std::unique_ptr<CheckedFile> out;
  std::optional<std::string> write_error;
  DownloadProgress* progress = nullptr;
};

// The first bytes of the body decide: 206 appends to the part, anything else
// (200; 0 for file://) starts it over; an HTTP error writes nothing.
size_t on_data(char* data, size_t size, size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  try {
    if (!t.opened) {
      curl_easy_getinfo(t.curl, CURLINFO_RESPONSE_CODE, &t.status);
      if (t.status >= 400) return 0;
      const bool append = t.offset > 0 && t.status == 206;
      if (!append) t.offset = 0;
      t.out = std::make_unique<CheckedFile>(
          t.part.string(), append ? CheckedFile::Mode::kAppend : CheckedFile::Mode::kTruncate);
      t.opened = true;
    }
    t.out->write(data, bytes);
  } catch (const Error& e) {
    t.write_error = e.what();
    return 0;  // libcurl stops with CURLE_WRITE_ERROR
  }
  t.written += bytes;
  return bytes;
}

int on_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto& t = *static_cast<Transfer*>(user);
  (void)now;
  const uint64_t expected = total > 0 ? t.offset + static_cast<uint64_t>(total) : 0;
  t.progress->update(t.offset + t.written, expected);
  return 0;
}

// curl_slist of `headers`, freed with the handle's scope.
using HeaderList = std::unique_ptr<curl_slist, void (*)(curl_slist*)>;
HeaderList header_list(const std::vector<std::string>& headers) {
  curl_slist* list = nullptr;
  for (const auto& header : headers)
    list = curl_slist_append(list, header.c_str());
  return HeaderList(list, curl_slist_free_all);
}

// One header line of an answer into `headers`, its name in lower case.
size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& headers = *static_cast<std::map<std::string, std::string>*>(user);
  const std::string line(data, size * count);
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name)
      c = char(std::tolower(static_cast<unsigned char>(c)));
    const size_t begin = line.find_first_not_of(" \t", colon + 1);
    const size_t end = line.find_last_not_of(" \t\r\n");
    headers[name] =
        begin == std::string::npos || end < begin ? "" : line.substr(begin, end - begin + 1);
  }
  return size * count;
}

using CurlHandle = std::unique_ptr<CURL, void (*)(CURL*)>;

// A handle for `url` with what every request of vit's sets: its name, the
// connect timeout, no signals, the error text into `reason`, and `headers`.
CurlHandle request(const std::string& url, char* reason, const HeaderList& headers) {
  CurlHandle handle(curl_easy_init(), curl_easy_cleanup);
  if (!handle) throw Error("cannot initialise libcurl");
  CURL* curl = handle.get();
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "vit");
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, reason);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, kConnectTimeoutS);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  if (headers) curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  return handle;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw Error("cannot initialise libcurl");
  });
}

uint64_t size_or_zero(const fs::path& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  return ec ? 0 : size;
}

}  // namespace

void fetch_url(const std::string& url, const fs::path& part, const std::string& label,
               const std::vector<std::string>& headers) {
  global_init();
  char reason[CURL_ERROR_SIZE] = "";
  const HeaderList header_lines = header_list(headers);
  const CurlHandle handle = request(url, reason, header_lines);
  CURL* curl = handle.get();
  DownloadProgress progress(label, ::isatty(STDERR_FILENO) == 1);
  Transfer t;
  t.curl = curl;
  t.part = part;
  t.offset = size_or_zero(part);
  t.progress = &progress;
  const std::string range = fmt::format("{}-", t.offset);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, kStallTimeoutS);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &t);
  if (t.offset > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  const CURLcode rc = curl_easy_perform(curl);
  if (!t.opened) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &t.status);
  if (t.out) {
    std::unique_ptr<CheckedFile> out = std::move(t.out);
    try {
      out->close();
    } catch (const Error& e) {
      if (!t.write_error) t.write_error = e.what();
    }
  }
  if (t.write_error) throw Error(*t.write_error);
  // 416: the part already holds the whole file (a run stopped before checking it).
  if (t.status == 416 && t.offset > 0) return;
  if (t.status >= 400)
    throw Error(fmt::format("cannot download {}: the server answered HTTP {}", url, t.status));
  if (rc != CURLE_OK) {
    const std::string why = reason[0] ? reason : curl_easy_strerror(rc);
    const uint64_t have = t.offset + t.written;
    if (have > 0) {
      throw Error(fmt::format(
          "download of {} broke off after {} bytes ({}); they are kept in {}, and the next run "
          "resumes there",
          url, have, why, part.string()));
    }
    throw Error(fmt::format("cannot download {}: {}", url, why));
  }
  if (!t.opened) write_bytes(part.string(), "", 0);  // an empty file
  progress.finish(t.offset + t.written);
}

HeadAnswer head_url(const std::string& url, const std::vector<std::string>& headers) {
  global_init();
  char reason[CURL_ERROR_SIZE] = "";
  const HeaderList header_lines = header_list(headers);
  const CurlHandle handle = request(url, reason, header_lines);
  CURL* curl = handle.get();
  HeadAnswer answer;
  curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, kStallTimeoutS);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &answer.headers);
  const CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK)
    throw Error(
        fmt::format("cannot reach {}: {}", url, reason[0] ? reason : curl_easy_strerror(rc)));
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

}  // namespace vit::data
