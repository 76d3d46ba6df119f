#include "compare_plot.hpp"

#include "gnuplot.hpp"

#include "heightgrid/core/error.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace heightgrid::app {

bool plot_compare(std::string const& path, std::string const& title, std::vector<plotted_mode> const& modes,
                  cell_count_stats const& stats, int repeat)
{
  plot_scratch dir;
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
  std::ostringstream gp;
  gp << "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
        "  set terminal pngcairo size 1400,560 font 'sans,10'\n"
        "} else {\n"
        "  set terminal png size 1400,560\n"
        "}\n"
     << "set termoption noenhanced\n"
     << "set output " << gnuplot_quote(dir.png().string()) << "\n"
     << "cd " << gnuplot_quote(dir.path().string()) << "\n"
     << "set multiplot layout 1,2 title " << gnuplot_quote(title) << "\n"
     << "set style fill solid 0.7 border -1\n"
        "set boxwidth 0.6\n"
        "set grid ytics\n"
        "unset key\n"
        "set logscale y\n"
     << "set title " << gnuplot_quote("Reduce time per mode: median of " + std::to_string(repeat) + " runs (bars: min to max)") << "\n"
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
  return run_gnuplot(dir, gp.str(), path, "the table and --json are unaffected");
}

}  // namespace heightgrid::app
