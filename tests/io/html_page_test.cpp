#include "vit/io/html_page.hpp"

#include <gtest/gtest.h>

namespace vit::io {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(HtmlPage, EscapesEveryTextItWrites) {
  EXPECT_EQ(html_escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  HtmlPage page("T <1>");
  page.section("S & S", "s");
  page.paragraph("<script>alert(1)</script>");
  page.table({"k<"}, {{"v>"}});
  page.preformatted("{\"a\": 1}");
  const std::string html = page.html();
  EXPECT_TRUE(contains(html, "<title>T &lt;1&gt;</title>"));
  EXPECT_TRUE(contains(html, "<h2 id=\"s\">S &amp; S</h2>"));
  EXPECT_TRUE(contains(html, "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"));
  EXPECT_TRUE(contains(html, "<th>k&lt;</th>"));
  EXPECT_TRUE(contains(html, "<td>v&gt;</td>"));
  EXPECT_TRUE(contains(html, "<pre>{&quot;a&quot;: 1}</pre>"));
  EXPECT_TRUE(contains(html, "<li><a href=\"#s\">S &amp; S</a></li>"));
  EXPECT_FALSE(contains(html, "<script"));
}

TEST(HtmlPage, ImagesAreEmbeddedDataUris) {
  HtmlPage page("t");
  page.image({0x89, 'P', 'N', 'G'}, "alt text", "a caption");
  const std::string html = page.html();
  EXPECT_TRUE(contains(html, "<img alt=\"alt text\" src=\"data:image/png;base64,iVBORw==\">"));
  EXPECT_TRUE(contains(html, "<figcaption>a caption</figcaption>"));
  EXPECT_TRUE(contains(html, "<!DOCTYPE html>"));
  EXPECT_TRUE(contains(html, "<meta charset=\"utf-8\">"));
  EXPECT_FALSE(contains(html, "http"));  // nothing to fetch from a network
}

}  // namespace
}  // namespace vit::io
