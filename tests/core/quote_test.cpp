#include "heightgrid/core/quote.hpp"

#include <gtest/gtest.h>

#include <string>

namespace heightgrid {
namespace {

TEST(quote_for_message, escapes_binary_and_keeps_what_follows_a_nul)
{
  EXPECT_EQ(quote_for_message(std::string("a\0b", 3)), "'a\\x00b'");
  EXPECT_EQ(quote_for_message("tab\there"), "'tab\\x09here'");
  EXPECT_EQ(quote_for_message("\x1b[31mred"), "'\\x1b[31mred'");
  EXPECT_EQ(quote_for_message("\xff\xfe"), "'\\xff\\xfe'");
  EXPECT_EQ(quote_for_message("back\\slash"), "'back\\\\slash'");
}

TEST(quote_for_message, cuts_long_text)
{
  EXPECT_EQ(quote_for_message(std::string(10, 'q'), 4), "'qqqq...'");
  EXPECT_EQ(quote_for_message(std::string(4, 'q'), 4), "'qqqq'");
  EXPECT_EQ(quote_for_message(""), "''");
}

TEST(printable, keeps_lines_and_tabs_escapes_the_rest)
{
  EXPECT_EQ(printable("a\nb\tc"), "a\nb\tc");
  EXPECT_EQ(printable(std::string("x\0y\r", 4)), "x\\x00y\\x0d");
}

}  // namespace
}  // namespace heightgrid
