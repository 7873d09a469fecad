#include "vit/io/html_page.hpp"

#include "vit/io/base64.hpp"

namespace vit::io {
namespace {

constexpr const char* kStyle = R"(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1100px;
       margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.45; }
h1 { margin-bottom: 0.2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.92em; margin-top: 0.3em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
nav ol { columns: 2; }
)";

}  // namespace

std::string html_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

HtmlPage::HtmlPage(std::string title) : title_(std::move(title)) {}

void HtmlPage::section(const std::string& heading, const std::string& anchor) {
  contents_.emplace_back(anchor, heading);
  body_ += "<h2 id=\"" + html_escape(anchor) + "\">" + html_escape(heading) + "</h2>\n";
}

void HtmlPage::paragraph(const std::string& text) {
  body_ += "<p>" + html_escape(text) + "</p>\n";
}

void HtmlPage::image(const std::vector<uint8_t>& png, const std::string& alt,
                     const std::string& caption) {
  body_ += "<figure><img alt=\"" + html_escape(alt) + "\" src=\"data:image/png;base64," +
           base64_encode(png) + "\">";
  if (!caption.empty()) body_ += "<figcaption>" + html_escape(caption) + "</figcaption>";
  body_ += "</figure>\n";
}

void HtmlPage::table(const std::vector<std::string>& header,
                     const std::vector<std::vector<std::string>>& rows) {
  body_ += "<table><thead><tr>";
  for (const auto& cell : header)
    body_ += "<th>" + html_escape(cell) + "</th>";
  body_ += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    body_ += "<tr>";
    for (const auto& cell : row)
      body_ += "<td>" + html_escape(cell) + "</td>";
    body_ += "</tr>\n";
  }
  body_ += "</tbody></table>\n";
}

void HtmlPage::preformatted(const std::string& text) {
  body_ += "<pre>" + html_escape(text) + "</pre>\n";
}

std::string HtmlPage::html() const {
  std::string nav = "<nav><ol>";
  for (const auto& [anchor, heading] : contents_)
    nav += "<li><a href=\"#" + html_escape(anchor) + "\">" + html_escape(heading) + "</a></li>";
  nav += "</ol></nav>\n";
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
         html_escape(title_) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>" +
         html_escape(title_) + "</h1>\n" + nav + body_ + "</body>\n</html>\n";
}

}  // namespace vit::io
