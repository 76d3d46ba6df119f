// Option abuse: every bad value is bad usage (exit 2) with a message naming the option.

#include "hostile_cases.hpp"

#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

/// A small valid XYZ input far from the origin (so a tiny cell cannot be snapped).
std::string small_xyz(fs::path const& dir)
{
  auto const path = dir / "in.xyz";
  std::ofstream(path) << "500000.25 4100000.75 10\n500010.5 4100020.25 12\n500003 4100007 11\n";
  return path.string();
}

std::string clean_name(std::string s)
{
  std::string out;
  for (char c : s) { out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_'; }
  return out;
}

}  // namespace

std::vector<hostile_case> option_cases()
{
  struct bad {
    std::vector<std::string> extra;
    std::string says;
    int code{2};
  };
  std::vector<bad> const grid_bad{
    {{"--res", "1", "--threads", "100000"}, "--threads"},
    {{"--res", "1", "--threads", "1024"}, "--threads"},
    {{"--res", "1", "--threads", "-1"}, "--threads"},
    {{"--res", "1", "--threads", "abc"}, "--threads"},
    {{"--res", "1", "--threads", "99999999999999"}, "--threads"},
    {{"--res", "0"}, "resolution"},
    {{"--res", "-1"}, "resolution"},
    {{"--res", "nan"}, "resolution"},
    {{"--res", "inf"}, "resolution"},
    {{"--res", "abc"}, "--res"},
    {{"--res", "1e-12"}, "too fine"},
    {{"--res", "1e-15"}, "1e-15"},
    {{"--res", "1e-310"}, "1e-310"},
    {{"--res", "5e-324"}, "4.94066e-324"},
    {{"--res", "1", "--tr", "1", "1"}, "--tr"},
    {{"--tr", "1"}, "--tr"},
    {{"--tr", "1", "0"}, "resolution"},
    {{"--tr", "1e-300", "1e-300"}, "1e-300"},
    {{"--res", "1", "--te", "10", "0", "0", "10"}, "extent"},
    {{"--res", "1", "--te", "0", "0", "nan", "10"}, "extent"},
    {{"--res", "1", "--te", "0", "0", "10"}, "--te"},
    {{"--res", "1e-9", "--te", "0", "0", "1000", "1000"}, "columns", 5},
    {{"--res", "1", "--metrics", "foo"}, "foo"},
    {{"--res", "1", "--metrics", ""}, "--metrics"},
    {{"--res", "1", "--metrics", "range,,min"}, "--metrics"},
    {{"--res", "1", "--nodata", "abc"}, "--nodata"},
    {{"--res", "1", "--nodata", "inf"}, "--nodata"},
    {{"--res", "1", "--nodata", "1e39"}, "--nodata"},
    {{"--res", "1", "--of", "PNG"}, "--of"},
    {{"--res", "1", "--co", "COMPRESS=FOO"}, "--co"},
    {{"--res", "1", "--co", "=x"}, "--co"},
    {{"--res", "1", "--co", "NOKEY"}, "--co"},
    {{"--res", "1", "--co", "BLOCKXSIZE=7"}, "--co"},
    {{"--res", "1", "--of", "COG", "--co", "COMPRESS=FOO"}, "--co"},
    {{"--res", "1", "--device", "tpu"}, "--device"},
    {{"--res", "1", "--mode", "foo"}, "--mode"},
    {{"--res", "1", "--memory", "1K"}, "--memory"},
    {{"--res", "1", "--memory", "abc"}, "--memory"},
    {{"--res", "1", "--memory", "1e30G"}, "--memory"},
    {{"--res", "1", "--memory", "5Q"}, "--memory"},
    {{"--res", "1", "--chunk-points", "0"}, "--chunk-points"},
    {{"--res", "1", "--chunk-points", "-5"}, "--chunk-points"},
    {{"--res", "1", "--classes", "256"}, "--classes"},
    {{"--res", "1", "--classes", "-1"}, "--classes"},
    {{"--res", "1", "--drop-classes", "300"}, "--drop-classes"},
    {{"--res", "1", "--returns", "second"}, "--returns"},
    {{"--res", "1", "--z-min", "nan"}, "--z-min: nan"},
    {{"--res", "1", "--z-max", "nan"}, "--z-max: nan"},
    {{"--res", "1", "--z-min", "10", "--z-max", "5"}, "--z-min 10 is above --z-max 5"},
    {{"--res", "1", "--input-format", "shp"}, "--input-format"},
    {{"--res", "1", "--a_srs", "EPSG:999999"}, "EPSG:999999"},
    {{"--res", "1", "--a_srs", "garbage"}, "garbage"},
    {{"--res", "1", "--bogus"}, "--bogus"},
    {{"--res"}, "--res"},
    {{"--res", "1", "--synth", "uniform"}, "--synth"},
  };
  std::vector<hostile_case> out;
  for (auto const& b : grid_bad) {
    hostile_case c;
    std::string n;
    for (auto const& e : b.extra) { n += "_" + e; }
    c.name = "grid" + clean_name(n);
    c.make = small_xyz;
    c.args = {"grid", "{in}", "-o", "{out}"};
    c.args.insert(c.args.end(), b.extra.begin(), b.extra.end());
    c.code = b.code;
    c.says = {b.says};
    out.push_back(c);
  }
  // Synthetic clouds: sizes past any use, and bad shapes.
  std::vector<bad> const synth_bad{
    {{"--points", "18446744073709551000"}, "--points"},
    {{"--points", "18446744073709551616"}, "--points"},
    {{"--points", "-1"}, "--points"},
    {{"--points", "1125899906842625"}, "--points"},
    {{"--points", "100", "--density", "0"}, "--density"},
    {{"--points", "100", "--density", "nan"}, "--density"},
    {{"--synth-extent", "0", "0", "-1", "5"}, "--synth-extent"},
    {{"--density", "1e300", "--synth-extent", "0", "0", "1e10", "1e10"}, "--density"},
    {{"--cell-size", "0"}, "--cell-size"},
  };
  for (auto const& b : synth_bad) {
    hostile_case c;
    std::string n;
    for (auto const& e : b.extra) { n += "_" + e; }
    c.name = "synth" + clean_name(n);
    c.args = {"grid", "--synth", "uniform", "-o", "{out}", "--res", "1"};
    c.args.insert(c.args.end(), b.extra.begin(), b.extra.end());
    c.code = b.code;
    c.says = {b.says};
    out.push_back(c);
  }
  {
    hostile_case c;
    c.name = "synth_unknown_kind";
    c.args = {"grid", "--synth", "fractal", "-o", "{out}", "--res", "1"};
    c.code = 2;
    c.says = {"fractal"};
    out.push_back(c);
  }
  // The command line itself.
  struct line {
    std::string name;
    std::vector<std::string> args;
    std::string says;
  };
  for (auto const& l : std::vector<line>{{"no_arguments", {}, "subcommand"},
                                         {"unknown_subcommand", {"frobnicate"}, "subcommand"},
                                         {"grid_without_output", {"grid", "{in}", "--res", "1"}, "--output"},
                                         {"grid_without_res", {"grid", "{in}", "-o", "{out}"}, "--res"},
                                         {"grid_without_input", {"grid", "-o", "{out}", "--res", "1"}, "input"},
                                         {"grid_output_without_value", {"grid", "{in}", "--res", "1", "-o"}, "-o"},
                                         {"unknown_global_flag", {"--frob", "grid", "{in}", "-o", "{out}", "--res", "1"}, "--frob"},
                                         {"info_bad_res", {"info", "{in}", "--res", "abc"}, "--res"},
                                         {"info_tiny_res", {"info", "{in}", "--res", "1e-15"}, "1e-15"},
                                         {"info_denormal_res", {"info", "{in}", "--res", "1e-310"}, "1e-310"},
                                         {"info_threads", {"info", "{in}", "--threads", "100000"}, "--threads"},
                                         {"compare_threads", {"compare", "{in}", "--res", "1", "--threads", "100000"}, "--threads"},
                                         {"synth_points_huge", {"synth", "uniform", "-o", "{dir}/s.las", "--points", "18446744073709551000"}, "--points"}}) {
    hostile_case c;
    c.name = "cli_" + l.name;
    c.make = small_xyz;
    c.args = l.args;
    c.code = 2;
    c.says = {l.says};
    out.push_back(c);
  }
  return out;
}

}  // namespace heightgrid::test
