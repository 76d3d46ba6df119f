#include "heightgrid/io/text_source.hpp"

#include "heightgrid/core/error.hpp"

#include "io/io_test_helpers.hpp"
#include "test_paths.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>

namespace heightgrid::io {
namespace {

using test::read_all;
using test::xyz;

class TextSource : public ::testing::Test {
 protected:
  std::filesystem::path dir = test::scratch_dir("text_source");

  std::vector<xyz> parse(std::string const& content, text_options const& options = {})
  {
    auto const path = test::write_text(dir / "points.txt", content);
    auto source = open_text_source(path.string(), options);
    EXPECT_EQ(source->info().format, "XYZ text");
    EXPECT_EQ(source->info().path, path.string());
    EXPECT_FALSE(source->info().point_count.has_value());
    return read_all(*source);
  }

  /// The message of the error parsing `content` throws.
  std::string parse_error(std::string const& content, text_options const& options = {})
  {
    try {
      parse(content, options);
    } catch (error const& e) {
      EXPECT_EQ(e.kind(), error_kind::input);
      return e.what();
    }
    ADD_FAILURE() << "no error for: " << content;
    return {};
  }
};

std::vector<xyz> const three = {{1, 2, 3}, {4.5, -5.25, 6e2}, {-7, 8, 0.125}};

TEST_F(TextSource, Whitespace)
{
  EXPECT_EQ(parse("1 2 3\n4.5\t-5.25  6e2\n  -7 8 0.125\n"), three);
}

TEST_F(TextSource, Comma) { EXPECT_EQ(parse("1,2,3\n4.5, -5.25 ,6E+2\n-7,8,0.125"), three); }

TEST_F(TextSource, Semicolon) { EXPECT_EQ(parse("1;2;3\n4.5;-5.25;600\n-7;8;.125\n"), three); }

TEST_F(TextSource, HeaderCommentsBlankLinesAndCrlf)
{
  EXPECT_EQ(parse("# exported by a scanner\r\n\r\nX,Y,Z,intensity\r\n1,2,3,77\r\n# middle\r\n"
                  "4.5,-5.25,600,78\r\n   \r\n-7,8,0.125,79\r\n"),
            three);
}

TEST_F(TextSource, ByteOrderMarkAndPlusSign) { EXPECT_EQ(parse("\xEF\xBB\xBFx y z\n+1 +2 +3\n"), (std::vector<xyz>{{1, 2, 3}})); }

TEST_F(TextSource, ExtraColumnsAndChosenColumns)
{
  text_options o;
  o.x_col = 3;
  o.y_col = 1;
  o.z_col = 0;
  EXPECT_EQ(parse("3 2 9 1 extra\n600 -5.25 9 4.5\n", o), (std::vector<xyz>{{1, 2, 3}, {4.5, -5.25, 600}}));
}

TEST_F(TextSource, ExplicitDelimiter)
{
  text_options o;
  o.delimiter = '|';
  EXPECT_EQ(parse("1|2|3\n", o), (std::vector<xyz>{{1, 2, 3}}));
  o.delimiter = '.';
  EXPECT_THROW(parse("1.2.3\n", o), error);
}

TEST_F(TextSource, ExactDecimalConversion)
{
  // from_chars rounds correctly: the same doubles as the compiler's literals.
  auto const p = parse("0.1 123456789.123456789 -1.7976931348623157e308\n");
  ASSERT_EQ(p.size(), 1U);
  EXPECT_EQ(p[0][0], 0.1);
  EXPECT_EQ(p[0][1], 123456789.123456789);
  EXPECT_EQ(p[0][2], -1.7976931348623157e308);
}

TEST_F(TextSource, NanAndInfAreLeftToTheFilter)
{
  auto const p = parse("1 2 nan\n1 2 inf\n");
  ASSERT_EQ(p.size(), 2U);
  EXPECT_TRUE(std::isnan(p[0][2]));
  EXPECT_TRUE(std::isinf(p[1][2]));
}

TEST_F(TextSource, TinyBlocksCarryPartialLinesOver)
{
  // Lines straddle every read and some are longer than the block, so the buffer must grow.
  std::string content = "x y z\n";
  std::vector<xyz> expected;
  for (int i = 0; i < 500; ++i) {
    std::string const z = std::to_string(i * 1000) + "e-3";
    content += std::to_string(i) + ".5 " + std::to_string(-i) + " " + z;
    content += (i % 3 == 0) ? "\r\n" : "\n";
    expected.push_back({i + 0.5, static_cast<double>(-i), std::stod(z)});
  }
  content.pop_back();  // no newline after the last line
  for (std::size_t block : {1, 2, 3, 7, 13, 64, 4096}) {
    text_options o;
    o.block_bytes = block;
    auto const p = parse(content, o);
    EXPECT_EQ(p, expected) << "block " << block;
  }
}

TEST_F(TextSource, ChunksOfAnySize)
{
  auto const path = test::write_text(dir / "chunks.txt", "1 1 1\n2 2 2\n3 3 3\n4 4 4\n5 5 5\n");
  auto source = open_text_source(path.string());
  auto const p = read_all(*source, 2);
  ASSERT_EQ(p.size(), 5U);
  EXPECT_EQ(p[4], (xyz{5, 5, 5}));
}

TEST_F(TextSource, MalformedLineNamesFileLineAndText)
{
  auto const message = parse_error("x y z\n1 2 3\n\n4 5 abc\n");
  EXPECT_NE(message.find("points.txt"), std::string::npos) << message;
  EXPECT_NE(message.find("line 4"), std::string::npos) << message;
  EXPECT_NE(message.find("column 3"), std::string::npos) << message;
  EXPECT_NE(message.find("'abc'"), std::string::npos) << message;
  EXPECT_NE(message.find("'4 5 abc'"), std::string::npos) << message;
}

TEST_F(TextSource, TooFewColumns)
{
  auto const message = parse_error("1,2,3\n4,5\n");
  EXPECT_NE(message.find("line 2: expected at least 3 columns, found 2: '4,5'"), std::string::npos) << message;
}

TEST_F(TextSource, TrailingGarbageAndDecimalComma)
{
  EXPECT_NE(parse_error("1 2 3\n1 2 3.0x\n").find("line 2"), std::string::npos);
  EXPECT_NE(parse_error("1;2;3\n1,5;2;3\n").find("'1,5'"), std::string::npos);
}

TEST_F(TextSource, LongBadLineIsTruncated)
{
  auto const message = parse_error("1 2 3\n1 2 " + std::string(1000, 'z') + "\n");
  EXPECT_LT(message.size(), 400U) << message;
  EXPECT_NE(message.find("...'"), std::string::npos) << message;
}

TEST_F(TextSource, EmptyAndCommentOnlyFilesHaveNoPoints)
{
  EXPECT_TRUE(parse("").empty());
  EXPECT_TRUE(parse("# nothing\n\n").empty());
}

TEST_F(TextSource, AHeaderWithoutDataIsAnErrorNamingTheHeaderLine)
{
  // Issue 24: not "the input is empty": the file has a line, and nothing after it is data.
  std::ofstream(dir / "header.csv") << "x,y,z\n";
  auto source = open_text_source((dir / "header.csv").string());
  point_chunk chunk;
  try {
    (void)source->read(chunk, 100);
    FAIL() << "no error";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::input);
    EXPECT_NE(std::string(e.what()).find("header.csv: no data line: line 1 'x,y,z'"), std::string::npos) << e.what();
  }
}

TEST_F(TextSource, AFirstLineWithoutLettersThatDoesNotParseIsAnError)
{
  std::ofstream(dir / "short.xyz") << "1 2\n3 4 5\n";
  auto source = open_text_source((dir / "short.xyz").string());
  point_chunk chunk;
  try {
    (void)source->read(chunk, 100);
    FAIL() << "no error";
  } catch (error const& e) {
    EXPECT_NE(std::string(e.what()).find("short.xyz: line 1: expected at least 3 columns, found 2"), std::string::npos)
      << e.what();
  }
}

TEST_F(TextSource, MissingFile)
{
  try {
    (void)open_text_source((dir / "absent.xyz").string());
    FAIL() << "no error";
  } catch (error const& e) {
    EXPECT_EQ(e.kind(), error_kind::input);
    EXPECT_NE(std::string(e.what()).find("absent.xyz"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace heightgrid::io
