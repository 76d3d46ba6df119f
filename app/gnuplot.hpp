#pragma once
// The one way the commands draw plots: a gnuplot script run by the gnuplot on PATH, in a scratch
// directory that is removed afterwards, its PNG moved into place atomically. Plots are optional:
// without gnuplot, or when it fails, a warning says so and the command's other outputs stand.

#include <filesystem>
#include <string>

namespace heightgrid::app {

/// A string literal for a gnuplot script: single quotes, an embedded quote doubled.
/// Example: it's -> 'it''s'.
[[nodiscard]] std::string gnuplot_quote(std::string const& s);

/// A scratch directory removed with everything in it when this goes out of scope.
class plot_scratch {
 public:
  plot_scratch();
  plot_scratch(plot_scratch const&) = delete;
  plot_scratch& operator=(plot_scratch const&) = delete;
  ~plot_scratch();
  [[nodiscard]] std::filesystem::path const& path() const noexcept { return path_; }
  /// Where the script must `set output`: the runner moves it to the plot's path.
  [[nodiscard]] std::filesystem::path png() const { return path_ / "plot.png"; }

 private:
  std::filesystem::path path_;
};

/// Runs `script` (which draws into scratch.png(), and may read data files of scratch.path()) and
/// writes the PNG to `path`. Returns false, after a warning naming `path` and ending with
/// `unaffected` (e.g. "the table and --json are unaffected"), when gnuplot is not on PATH or fails.
bool run_gnuplot(plot_scratch const& scratch, std::string const& script, std::string const& path,
                 std::string const& unaffected);

}  // namespace heightgrid::app
