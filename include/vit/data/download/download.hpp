#pragma once
// One file over HTTP(S), FTP or file:// (libcurl), resumable: what a broken
// transfer left in the part file is kept, and the next call asks the server
// for the rest with an HTTP Range request.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace vit::data {

// Fetches `url` into `part`, after the bytes `part` already holds (a server
// that ignores the Range request sends the whole file, which then replaces
// them). Shows progress under the label `label` (a bar on a terminal, a log
// line every few seconds otherwise). Throws a one-line vit::Error naming the
// URL when the server cannot be reached, answers with an HTTP error (404), or
// the transfer breaks off (the part is kept, to be resumed), and naming the
// part file when it cannot be written (a full disk).
// `headers` are sent with the request ("Authorization: Bearer ..."); libcurl
// leaves them out when a redirect leads to another host.
void fetch_url(const std::string& url, const std::filesystem::path& part, const std::string& label,
               const std::vector<std::string>& headers = {});

// A HEAD request that follows no redirect: the status and the answer's
// headers, their names in lower case. A vit::Error naming the URL when the
// server cannot be reached.
struct HeadAnswer {
  long status = 0;
  std::map<std::string, std::string> headers;
};
HeadAnswer head_url(const std::string& url, const std::vector<std::string>& headers = {});

}  // namespace vit::data
