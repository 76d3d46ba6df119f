#pragma once
// XYZ / CSV text files as a point source: a native parser, no GDAL involved.

#include "heightgrid/core/point_source.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace heightgrid::io {

struct text_options {
  /// Field separator. 0 = detect from the first non-comment line: ';' if it has one, else ','
  /// if it has one, else whitespace. ' ' or '\t' means runs of blanks and tabs.
  char delimiter = 0;
  /// 0-based columns of x, y and z; other columns are ignored.
  std::size_t x_col = 0;
  std::size_t y_col = 1;
  std::size_t z_col = 2;
  /// Bytes per read. Lines may straddle reads (the partial line is carried over) and may be
  /// longer than a block (the buffer grows); tests use tiny blocks to exercise both.
  std::size_t block_bytes = std::size_t{16} << 20;
};

/// Opens a text file of points, one per line: `x y z [more columns]`.
///
/// Blank lines and lines starting with '#' are skipped, CRLF line ends and a UTF-8 byte order
/// mark are accepted. The first remaining line is a header when its x, y and z fields are not
/// all numbers. Numbers are parsed with std::from_chars (so "1e3", "-0.5" and a leading '+' are
/// fine, "1,5" is not); "nan" and "inf" are read as such and left to the filter stage.
///
/// Throws error_kind::input when the file cannot be opened or read, and on a malformed line:
/// "<path>: line 12: column 3 is not a number: 'abc' in '1.0 2.0 abc'". An empty file is not an
/// error: it has no points.
[[nodiscard]] std::unique_ptr<point_source> open_text_source(std::string const& path,
                                                             text_options const& options = {});

}  // namespace heightgrid::io
