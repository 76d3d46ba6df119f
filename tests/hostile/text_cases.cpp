// XYZ/CSV text that is not point data: garbage, binary, broken lines, lying headers.

#include "hostile_cases.hpp"

#include <fstream>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

hostile_case text_case(std::string name, std::string ext, std::string content, std::vector<std::string> says)
{
  hostile_case c;
  c.name = "text_" + name + "_" + ext;
  c.make = [content, ext](fs::path const& dir) {
    auto const path = dir / ("in." + ext);
    std::ofstream(path, std::ios::binary) << content;
    return path.string();
  };
  c.args = {"grid", "{in}", "-o", "{out}", "--res", "1"};
  c.code = 3;
  says.insert(says.begin(), "{in}");
  c.says = says;
  return c;
}

}  // namespace

std::vector<hostile_case> text_cases()
{
  struct garbage {
    std::string name, content;
    std::vector<std::string> says;
  };
  std::string const binary("\x00\x01\x02\xff\xfe\x7f\x1b[31mred\x00\x00\x80\x81", 18);
  std::vector<garbage> const cases{
    {"empty", "", {"empty"}},
    {"only_newlines", "\n\n\n", {"empty"}},
    {"only_comments", "# a comment\n# another\n", {"empty"}},
    {"only_blanks", "   \n\t\n", {"empty"}},
    {"only_bom", "\xEF\xBB\xBF", {"empty"}},
    {"header_only", "x y z\n", {"header"}},
    {"header_then_garbage", "x y z\nfoo bar baz\n", {"line 2"}},
    {"two_columns_first_line", "1 2\n3 4 5\n", {"line 1"}},
    {"two_columns_later", "1 2 3\n4 5\n", {"line 2"}},
    {"word_in_data", "1 2 3\n4 five 6\n", {"line 2", "five"}},
    {"number_then_junk", "1 2 3\n4 5 6abc\n", {"line 2"}},
    {"overflowing_number", "1 2 3\n4 5 1e999\n", {"line 2"}},
    {"double_dot", "1 2 3\n4..5 5 6\n", {"line 2"}},
    {"binary_first", binary, {"\\x"}},
    {"binary_after_data", "1 2 3\n" + binary + "\n", {"line 2", "\\x"}},
    {"nul_inside_line", std::string("1 2 3\n4 5\x00 6\n", 13), {"line 2", "\\x00"}},
    {"escape_sequence", "1 2 3\n\x1b]0;pwned\x07 1 2\n", {"line 2", "\\x1b"}},
    {"very_long_garbage_line", "1 2 3\n" + std::string(300000, 'q') + "\n", {"line 2", "..."}},
    {"only_nan", "nan nan nan\n", {"empty"}},
    {"only_inf", "inf 1 2\n1 inf 3\n", {"empty"}},
    {"crlf_broken", "1 2 3\r\n4 5\r\n", {"line 2"}},
    {"plus_minus", "1 2 3\n+-4 5 6\n", {"line 2"}},
    {"hex_numbers", "1 2 3\n0x10 5 6\n", {"line 2"}},
    {"mixed_delimiters", "1,2,3\n4;5;6\n", {"line 2"}},
    {"empty_fields", "1,,3\n", {"line 1"}},
    {"utf16_text", std::string("\xff\xfe" "1\x00 \x00" "2\x00 \x00" "3\x00\n\x00", 14), {"line 1"}},
    {"garbage_no_letters", "---- ----\n1 2 3\n", {"line 1"}},
    {"semicolon_garbage", ";;;\n", {"line 1"}},
  };
  std::vector<hostile_case> out;
  for (std::string ext : {"xyz", "csv", "txt"}) {
    for (auto const& g : cases) { out.push_back(text_case(g.name, ext, g.content, g.says)); }
  }
  // Forced text reader on a file of another extension.
  auto c = text_case("forced_on_binary", "bin", binary, {"\\x"});
  c.args = {"grid", "{in}", "-o", "{out}", "--res", "1", "--input-format", "text"};
  out.push_back(c);
  // info meets the same files.
  for (auto const& g : cases) {
    // info describes an input without points ("no points: nothing to grid") and exits 0.
    if (g.says == std::vector<std::string>{"empty"}) { continue; }
    auto i = text_case("info_" + g.name, "xyz", g.content, g.says);
    i.args = {"info", "{in}"};
    out.push_back(i);
  }
  return out;
}

}  // namespace heightgrid::test
