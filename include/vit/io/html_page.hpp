#pragma once
// A self-contained HTML page: text, tables and PNG images embedded as base64
// data: URIs, one inline style sheet, no scripts and no external resources, so
// the file opens from disk with no server and no network.
#include <cstdint>
#include <string>
#include <vector>

namespace vit::io {

// &, <, >, " and ' as entities.
std::string html_escape(const std::string& text);

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  // <h2 id=anchor>; listed in the page's table of contents.
  void section(const std::string& heading, const std::string& anchor);
  void paragraph(const std::string& text);  // escaped
  // A PNG file's bytes as <figure><img src="data:image/png;base64,..."> with a caption.
  void image(const std::vector<uint8_t>& png, const std::string& alt, const std::string& caption);
  // A table with a header row; every cell escaped.
  void table(const std::vector<std::string>& header,
             const std::vector<std::vector<std::string>>& rows);
  void preformatted(const std::string& text);  // <pre>, escaped

  // The whole document.
  std::string html() const;

 private:
  std::string title_;
  std::vector<std::pair<std::string, std::string>> contents_;  // (anchor, heading)
  std::string body_;
};

}  // namespace vit::io
