#include "heightgrid/core/quote.hpp"

namespace heightgrid {
namespace {

void append_escaped(std::string& out, char c)
{
  auto const u = static_cast<unsigned char>(c);
  if (c == '\\') {
    out += "\\\\";
  } else if (u >= 0x20 && u < 0x7f) {
    out += c;
  } else {
    static constexpr char hex[] = "0123456789abcdef";
    out += "\\x";
    out += hex[u >> 4];
    out += hex[u & 0xf];
  }
}

}  // namespace

std::string quote_for_message(std::string_view text, std::size_t max_chars)
{
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < max_chars; ++i) { append_escaped(out, text[i]); }
  if (text.size() > max_chars) { out += "..."; }
  return out + "'";
}

std::string printable(std::string_view text)
{
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    // Tabs and line breaks of a multi-line message stay as they are.
    if (c == '\n' || c == '\t') {
      out += c;
    } else {
      append_escaped(out, c);
    }
  }
  return out;
}

}  // namespace heightgrid
