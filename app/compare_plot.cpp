#include "compare_plot.hpp"

#include "output_file.hpp"

#include "heightgrid/core/error.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace heightgrid::app {
namespace fs = std::filesystem;
namespace {

/// The first executable `name` on PATH, or empty.
fs::path find_on_path(std::string const& name)
{
  char const* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    fs::path const candidate = fs::path(dir.empty() ? "." : dir) / name;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) { return candidate; }
  }
  return {};
}

/// A string literal for a gnuplot script: single quotes, an embedded quote doubled.
std::string gp_quote(std::string const& s)
{
  std::string out = "'";
  for (char c : s) { out += c == '\'' ? std::string("''") : std::string(1, c); }
  return out + "'";
}

/// A scratch directory removed with everything in it when this goes out of scope.
class scratch_dir {
 public:
  scratch_dir()
  {
    char tmpl[] = "heightgrid-plot-XXXXXX";
    fs::path const pattern = fs::temp_directory_path() / tmpl;
    std::string buf = pattern.string();
    expects(::mkdtemp(buf.data()) != nullptr, error_kind::output, "--plot: cannot create a temporary directory in " +
                                                                     fs::temp_directory_path().string());
    path_ = buf;
  }
  scratch_dir(scratch_dir const&) = delete;
  scratch_dir& operator=(scratch_dir const&) = delete;
  ~scratch_dir()
  {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] fs::path const& path() const noexcept { return path_; }

 private:
  fs::path path_;
};

/// Runs `program script` with stdout and stderr into `log`; returns its exit status (-1 when it
/// could not be started or did not exit normally).
int run_program(fs::path const& program, fs::path const& script, fs::path const& log)
{
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  std::string prog = program.string();
  std::string arg = script.string();
  char* argv[] = {prog.data(), arg.data(), nullptr};
  pid_t pid = 0;
  int const rc = posix_spawn(&pid, prog.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) { return -1; }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) { return -1; }
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string read_all(fs::path const& p)
{
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

bool plot_compare(std::string const& path, std::string const& title, std::vector<plotted_mode> const& modes,
                  cell_count_stats const& stats, int repeat)
{
  auto const gnuplot = find_on_path("gnuplot");
  if (gnuplot.empty()) {
    spdlog::warn("--plot: gnuplot not found on PATH, so {} was not drawn; install gnuplot-nox "
                 "(apt-get install gnuplot-nox) for plots; the table and --json are unaffected",
                 path);
    return false;
  }
  scratch_dir dir;
  {
    std::ofstream times(dir.path() / "times.dat");
    times << "# mode median_ms min_ms max_ms label\n";
    times.precision(9);
    for (auto const& m : modes) {
      char label[64];
      std::snprintf(label, sizeof label, "%.3g ms", m.median_ms);
      times << '"' << m.name << "\" " << m.median_ms << ' ' << m.min_ms << ' ' << m.max_ms << " \"" << label << "\"\n";
    }
    std::ofstream hist(dir.path() / "hist.dat");
    hist << "# bin label cells\n";
    for (std::size_t k = 0; k < stats.histogram.size(); ++k) {
      if (stats.histogram[k] == 0) { continue; }  // nothing to draw on a log axis
      auto const lo = histogram_bin_low(k), hi = histogram_bin_high(k);
      hist << k << " \"" << (lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi)) << "\" "
           << stats.histogram[k] << '\n';
    }
  }
  // The time axis spans every mode's min..max with a margin of a factor 3 each side, so that a bar
  // (drawn up from the axis' bottom) is always taller than its whisker's bottom: with one mode,
  // autoscaling put the bottom of the axis at its fastest run and the bar all but vanished under
  // the whisker.
  double lowest = HUGE_VAL, highest = 0.0;
  for (auto const& m : modes) {
    if (m.min_ms > 0.0) { lowest = std::min(lowest, m.min_ms); }
    highest = std::max(highest, m.max_ms);
  }
  if (!(lowest <= highest)) { lowest = highest = 1.0; }
  double const y_bottom = std::pow(10.0, std::floor(std::log10(lowest / 3.0)));
  double const y_top = std::pow(10.0, std::ceil(std::log10(highest * 3.0)));
  fs::path const png = dir.path() / "plot.png";
  std::ostringstream gp;
  gp << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
        "  set terminal pngcairo size 1400,560 font 'sans,10'\n"
        "} else {\n"
        "  set terminal png size 1400,560\n"
        "}\n"
     << "set termoption noenhanced\n"
     << "set output " << gp_quote(png.string()) << "\n"
     << "cd " << gp_quote(dir.path().string()) << "\n"
     << "set multiplot layout 1,2 title " << gp_quote(title) << "\n"
     << "set style fill solid 0.7 border -1\n"
        "set boxwidth 0.6\n"
        "set grid ytics\n"
        "unset key\n"
        "set logscale y\n"
     << "set title " << gp_quote("Reduce time per mode: median of " + std::to_string(repeat) + " runs (bars: min to max)") << "\n"
     << "set ylabel 'milliseconds (log scale)'\n"
        "set xrange [-0.6:" << static_cast<double>(modes.size()) - 0.4 << "]\n"
     << "set yrange [" << y_bottom << ":" << y_top << "]\n"
     // Whiskers as error bars (min..max) and the median's label above the whisker. The labels
     // are made here, not by gnuplot's sprintf on the column: gnuplot's %g differs by version.
     << "plot 'times.dat' using 0:2:xtic(1) with boxes lc rgb '#4472c4', \\\n"
        "     '' using 0:2:3:4 with yerrorbars pt -1 lw 1.5 lc rgb 'black', \\\n"
        "     '' using 0:4:5 with labels offset 0,0.8\n"
     << "set title 'Points per cell (log2 bins; empty cells in the first bar)'\n"
        "set xlabel 'points in a cell'\n"
        "set ylabel 'cells (log scale)'\n"
        // Rotated to the left of their ticks: to the right, the last one ran past the picture.
        "set xtics rotate by 45 right\n"
        "set autoscale x\n"
        "set yrange [0.5:*]\n"  // a bin of one cell still shows on the log axis
        "set offsets 0.6, 0.6, 0, 0\n"
        "plot 'hist.dat' using 1:3:xtic(2) with boxes lc rgb '#ed7d31'\n"
        "unset multiplot\n";
  {
    std::ofstream script(dir.path() / "compare.gp");
    script << gp.str();
  }
  int const rc = run_program(gnuplot, dir.path() / "compare.gp", dir.path() / "gnuplot.log");
  std::error_code ec;
  if (rc != 0 || !fs::is_regular_file(png, ec) || fs::file_size(png, ec) == 0) {
    spdlog::warn("--plot: gnuplot ({}) failed{}, so {} was not drawn; the table and --json are unaffected. "
                 "gnuplot said: {}",
                 gnuplot.string(), rc > 0 ? " with exit code " + std::to_string(rc) : std::string(), path,
                 read_all(dir.path() / "gnuplot.log"));
    return false;
  }
  temporary_file out{fs::path(path)};
  fs::copy_file(png, out.path(), fs::copy_options::overwrite_existing, ec);
  expects(!ec, error_kind::output, path + ": cannot write the plot: " + ec.message());
  out.commit();
  return true;
}

}  // namespace heightgrid::app
