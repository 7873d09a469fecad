#include "vit/io/csv.hpp"

#include <gtest/gtest.h>

namespace vit::io {
namespace {

TEST(CsvField, PlainTextStaysAsIs) {
  EXPECT_EQ(csv_field("img_0042.png"), "img_0042.png");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("T-shirt/top"), "T-shirt/top");
}

TEST(CsvField, CommasQuotesAndLineBreaksAreQuoted) {
  EXPECT_EQ(csv_field("a,b.png"), "\"a,b.png\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\rhere"), "\"cr\rhere\"");
}

}  // namespace
}  // namespace vit::io
