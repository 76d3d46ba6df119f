#include "heightgrid/io/text_source.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/quote.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace heightgrid::io {
namespace {

/// Longest excerpt of a bad line quoted in an error message.
constexpr std::size_t max_quoted_chars = 80;

std::string quote(std::string_view text) { return quote_for_message(text, max_quoted_chars); }

/// A first line that does not parse is a header only if it holds letters ("x y z", "X,Y,Z");
/// "1 2" or "1;;3" is a broken data line and an error.
bool has_letters(std::string_view line) noexcept
{
  return std::any_of(line.begin(), line.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  });
}

constexpr bool is_blank(char c) noexcept { return c == ' ' || c == '\t'; }

std::string_view trim_blanks(std::string_view s) noexcept
{
  while (!s.empty() && is_blank(s.front())) { s.remove_prefix(1); }
  while (!s.empty() && is_blank(s.back())) { s.remove_suffix(1); }
  return s;
}

/// The whole of `field` as a double, or false. from_chars rejects a leading '+', which
/// printf-style writers ("%+f") produce, so it is skipped here.
bool parse_number(std::string_view field, double& value) noexcept
{
  char const* first = field.data();
  char const* const last = first + field.size();
  if (first != last && *first == '+') {
    ++first;
    if (first != last && (*first == '-' || *first == '+')) { return false; }  // "+-4" is not a number
  }
  if (first == last) { return false; }
  auto const [end, ec] = std::from_chars(first, last, value, std::chars_format::general);
  return ec == std::errc() && end == last;
}

struct file_closer {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using file_ptr = std::unique_ptr<std::FILE, file_closer>;

/// Outcome of splitting one line into x, y, z.
struct line_fields {
  enum class status { ok, too_few_columns, not_a_number } state{status::ok};
  std::array<double, 3> xyz{};
  std::size_t columns_found{0};  ///< with too_few_columns
  std::size_t bad_column{0};     ///< 0-based, with not_a_number
  std::string_view bad_text;     ///< with not_a_number
};

class text_source final : public point_source {
 public:
  text_source(std::string const& path, text_options const& options) : options_(options)
  {
    HG_EXPECTS(options.block_bytes > 0, error_kind::usage, path + ": text block size must be positive");
    // Characters that end lines, start comments or belong to numbers cannot separate fields.
    HG_EXPECTS(std::string_view("\n\r#+-.0123456789eE").find(options.delimiter) == std::string_view::npos,
            error_kind::usage, path + ": '" + std::string(1, options.delimiter) + "' cannot be a field delimiter");
    info_.path = path;
    info_.format = "XYZ text";
    file_.reset(std::fopen(path.c_str(), "rb"));
    HG_EXPECTS(file_ != nullptr, error_kind::input,
            path + ": cannot open: " + std::generic_category().message(errno));
    // We do our own large reads; stdio buffering would only add a copy.
    std::setvbuf(file_.get(), nullptr, _IONBF, 0);
    buffer_.resize(options.block_bytes);
    columns_ = {options.x_col, options.y_col, options.z_col};
    last_column_ = std::max({options.x_col, options.y_col, options.z_col});
    resolve_delimiter(options.delimiter);
  }

  [[nodiscard]] source_info const& info() const override { return info_; }

  bool read(point_chunk& chunk, std::size_t max_points) override
  {
    chunk.clear();
    while (chunk.size() < max_points) {
      std::string_view line;
      if (!next_line(line)) { break; }
      ++line_number_;
      parse_line(line, chunk);
    }
    points_read_ += chunk.size();
    if (chunk.empty() && points_read_ == 0 && !header_.empty()) {
      // Not "empty": the file has a line, and nothing after it parsed as data.
      throw error(error_kind::input, info_.path + ": no data line: line " + std::to_string(header_line_) + " " +
                                       quote(header_) + " was read as a column header and no line after it holds x y z");
    }
    return !chunk.empty();
  }

 private:
  void resolve_delimiter(char delimiter) noexcept
  {
    delimiter_ = delimiter;
    whitespace_ = is_blank(delimiter);
  }

  /// Next line without its '\n' (the last line of a file may lack one). The view points into
  /// buffer_ and is valid until the next call.
  bool next_line(std::string_view& line)
  {
    for (;;) {
      char* const begin = buffer_.data() + begin_;
      auto* const newline = static_cast<char*>(std::memchr(begin, '\n', end_ - begin_));
      if (newline != nullptr) {
        line = std::string_view(begin, static_cast<std::size_t>(newline - begin));
        begin_ += line.size() + 1;
        return true;
      }
      if (eof_) {
        if (begin_ == end_) { return false; }
        line = std::string_view(begin, end_ - begin_);
        begin_ = end_;
        return true;
      }
      refill();
    }
  }

  /// Moves the unfinished line to the front of the buffer and appends the next block.
  void refill()
  {
    std::size_t const carried = end_ - begin_;
    if (carried > 0 && begin_ > 0) { std::memmove(buffer_.data(), buffer_.data() + begin_, carried); }
    begin_ = 0;
    end_ = carried;
    // A line longer than the buffer: grow, so that any line length works.
    if (end_ == buffer_.size()) { buffer_.resize(buffer_.size() * 2); }
    std::size_t const wanted = std::min(options_.block_bytes, buffer_.size() - end_);
    std::size_t const got = std::fread(buffer_.data() + end_, 1, wanted, file_.get());
    if (got < wanted) {
      HG_EXPECTS(std::ferror(file_.get()) == 0, error_kind::input,
              info_.path + ": read error: " + std::generic_category().message(errno));
      eof_ = true;
    }
    end_ += got;
  }

  void parse_line(std::string_view line, point_chunk& chunk)
  {
    if (line_number_ == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") { line.remove_prefix(3); }
    if (!line.empty() && line.back() == '\r') { line.remove_suffix(1); }
    std::size_t start = 0;
    while (start < line.size() && is_blank(line[start])) { ++start; }
    if (start == line.size() || line[start] == '#') { return; }

    if (delimiter_ == 0) {
      auto const has = [&](char c) { return line.find(c) != std::string_view::npos; };
      resolve_delimiter(has(';') ? ';' : has(',') ? ',' : ' ');
    }
    auto const fields = whitespace_ ? split_blanks(line) : split_delimited(line);
    if (!header_decided_) {
      header_decided_ = true;
      if (fields.state != line_fields::status::ok && has_letters(line)) {  // the header line
        header_ = std::string(line);
        header_line_ = line_number_;
        return;
      }
    }
    if (fields.state != line_fields::status::ok) { throw malformed(line, fields); }
    chunk.x.push_back(fields.xyz[0]);
    chunk.y.push_back(fields.xyz[1]);
    chunk.z.push_back(fields.xyz[2]);
  }

  /// Stores `field` (column `column`) into out.xyz if it is one of x, y, z. False when that
  /// field is not a number.
  bool take(std::size_t column, std::string_view field, line_fields& out) const noexcept
  {
    for (std::size_t k = 0; k < 3; ++k) {
      if (columns_[k] == column && !parse_number(field, out.xyz[k])) {
        out.state = line_fields::status::not_a_number;
        out.bad_column = column;
        out.bad_text = field;
        return false;
      }
    }
    return true;
  }

  /// Fields separated by runs of blanks and tabs; leading blanks do not start a field.
  line_fields split_blanks(std::string_view line) const noexcept
  {
    line_fields out;
    char const* p = line.data();
    char const* const end = p + line.size();
    for (std::size_t column = 0; column <= last_column_; ++column) {
      while (p != end && is_blank(*p)) { ++p; }
      if (p == end) {
        out.state = line_fields::status::too_few_columns;
        out.columns_found = column;
        return out;
      }
      char const* const field = p;
      while (p != end && !is_blank(*p)) { ++p; }
      if (!take(column, std::string_view(field, static_cast<std::size_t>(p - field)), out)) { return out; }
    }
    return out;
  }

  /// Fields separated by one delimiter character; blanks around a field are not part of it.
  line_fields split_delimited(std::string_view line) const noexcept
  {
    line_fields out;
    std::size_t pos = 0;
    for (std::size_t column = 0; column <= last_column_; ++column) {
      if (pos > line.size()) {
        out.state = line_fields::status::too_few_columns;
        out.columns_found = column;
        return out;
      }
      std::size_t const stop = std::min(line.find(delimiter_, pos), line.size());
      if (!take(column, trim_blanks(line.substr(pos, stop - pos)), out)) { return out; }
      pos = stop + 1;
    }
    return out;
  }

  [[nodiscard]] error malformed(std::string_view line, line_fields const& fields) const
  {
    std::string const where = info_.path + ": line " + std::to_string(line_number_) + ": ";
    if (fields.state == line_fields::status::too_few_columns) {
      return error(error_kind::input, where + "expected at least " + std::to_string(last_column_ + 1) +
                                        " columns, found " + std::to_string(fields.columns_found) +
                                        ": " + quote(line));
    }
    return error(error_kind::input, where + "column " + std::to_string(fields.bad_column + 1) +
                                      " is not a number: " + quote(fields.bad_text) + " in " +
                                      quote(line));
  }

  source_info info_;
  text_options options_;
  file_ptr file_;
  std::vector<char> buffer_;
  std::size_t begin_{0};  ///< first unparsed byte in buffer_
  std::size_t end_{0};    ///< one past the last byte read into buffer_
  bool eof_{false};
  std::uint64_t line_number_{0};  ///< lines handed out so far (1-based number of the current one)
  bool header_decided_{false};
  std::string header_;             ///< the header line, if the file has one
  std::uint64_t header_line_{0};   ///< its number
  std::uint64_t points_read_{0};
  char delimiter_{0};
  bool whitespace_{false};
  std::array<std::size_t, 3> columns_{};
  std::size_t last_column_{2};
};

}  // namespace

std::unique_ptr<point_source> open_text_source(std::string const& path, text_options const& options)
{
  return std::make_unique<text_source>(path, options);
}

}  // namespace heightgrid::io
