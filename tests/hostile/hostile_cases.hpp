#pragma once
// One hostile case: what to put in a fresh directory, the command line, and what must come out.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace heightgrid::test {

struct hostile_case {
  std::string name;  ///< [A-Za-z0-9_] only: the parameter's name
  /// Writes the case's inputs into the directory; returns the path that {in} stands for ("" if none).
  std::function<std::string(std::filesystem::path const&)> make;
  /// Arguments; "{in}" is the input, "{out}" the output (dir/out.tif), "{dir}" the directory.
  std::vector<std::string> args;
  int code{3};
  /// Substrings the output must hold; "{in}" and "{out}" are replaced as in args.
  std::vector<std::string> says;
  bool real_data{false};  ///< needs HEIGHTGRID_REAL_DATA_DIR
};

std::vector<hostile_case> las_cases();
std::vector<hostile_case> laz_cases();
std::vector<hostile_case> text_cases();
std::vector<hostile_case> gdal_cases();
std::vector<hostile_case> option_cases();
std::vector<hostile_case> output_cases();

}  // namespace heightgrid::test

namespace heightgrid::test {
/// GoogleTest prints a case by its name (not its bytes).
inline void PrintTo(hostile_case const& c, std::ostream* os) { *os << c.name; }
}  // namespace heightgrid::test
