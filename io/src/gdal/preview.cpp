#include "heightgrid/io/preview.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/temp_registry.hpp"
#include "heightgrid/core/output_path.hpp"
#include "heightgrid/io/gdal_env.hpp"

#include "gdal/gdal_internal.hpp"

#include <gdal_priv.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace heightgrid::io {
namespace {

using rgb = std::array<std::uint8_t, 3>;

/// viridis at five stops, interpolated linearly.
rgb ramp(double t)
{
  static constexpr std::array<rgb, 5> stops{{{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}};
  t = std::clamp(t, 0.0, 1.0) * 4.0;
  auto const i = std::min<std::size_t>(3, static_cast<std::size_t>(t));
  double const f = t - static_cast<double>(i);
  rgb out{};
  for (std::size_t c = 0; c < 3; ++c) {
    out[c] = static_cast<std::uint8_t>(std::lround(stops[i][c] + f * (stops[i + 1][c] - stops[i][c])));
  }
  return out;
}

constexpr rgb nodata_colour{210, 210, 210};
constexpr rgb background{255, 255, 255};
constexpr rgb ink{0, 0, 0};

/// A 3 x 5 bitmap font for the legend's numbers and the word "nodata": each glyph five rows of
/// three bits, the top row first.
std::array<std::uint8_t, 5> glyph(char c)
{
  switch (c) {
    case '0': return {7, 5, 5, 5, 7};
    case '1': return {2, 6, 2, 2, 7};
    case '2': return {7, 1, 7, 4, 7};
    case '3': return {7, 1, 7, 1, 7};
    case '4': return {5, 5, 7, 1, 1};
    case '5': return {7, 4, 7, 1, 7};
    case '6': return {7, 4, 7, 5, 7};
    case '7': return {7, 1, 1, 1, 1};
    case '8': return {7, 5, 7, 5, 7};
    case '9': return {7, 5, 7, 1, 7};
    case '.': return {0, 0, 0, 0, 2};
    case '-': return {0, 0, 7, 0, 0};
    case '+': return {0, 2, 7, 2, 0};
    case 'e': return {7, 4, 7, 4, 7};
    case 'n': return {0, 0, 6, 5, 5};
    case 'o': return {0, 0, 7, 5, 7};
    case 'd': return {1, 1, 7, 5, 7};
    case 'a': return {0, 0, 3, 5, 7};
    case 't': return {2, 7, 2, 2, 3};
    default: return {0, 0, 0, 0, 0};
  }
}

class canvas {
 public:
  canvas(std::size_t w, std::size_t h) : w_(w), h_(h), px_(w * h * 3, 255) {}

  void set(std::size_t x, std::size_t y, rgb c)
  {
    if (x >= w_ || y >= h_) { return; }
    for (std::size_t k = 0; k < 3; ++k) { px_[(k * h_ + y) * w_ + x] = c[k]; }  // band-sequential
  }
  void fill(std::size_t x0, std::size_t y0, std::size_t w, std::size_t h, rgb c)
  {
    for (std::size_t y = y0; y < y0 + h; ++y) {
      for (std::size_t x = x0; x < x0 + w; ++x) { set(x, y, c); }
    }
  }
  /// Text of glyphs scaled by 2 (6 x 10 pixels, 8 apart); returns the width drawn.
  std::size_t text(std::size_t x0, std::size_t y0, std::string const& s)
  {
    constexpr std::size_t scale = 2;
    for (std::size_t i = 0; i < s.size(); ++i) {
      auto const g = glyph(s[i]);
      for (std::size_t r = 0; r < 5; ++r) {
        for (std::size_t c = 0; c < 3; ++c) {
          if ((g[r] >> (2 - c) & 1) != 0) { fill(x0 + i * 4 * scale + c * scale, y0 + r * scale, scale, scale, ink); }
        }
      }
    }
    return s.size() * 4 * scale;
  }
  [[nodiscard]] std::uint8_t* data() noexcept { return px_.data(); }
  [[nodiscard]] std::size_t width() const noexcept { return w_; }

 private:
  std::size_t w_, h_;
  std::vector<std::uint8_t> px_;
};

std::string label(double v)
{
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

preview_size preview_size_for(std::size_t cols, std::size_t rows) noexcept
{
  preview_size s;
  std::size_t const longer = std::max<std::size_t>(1, std::max(cols, rows));
  if (longer > 2048) {
    s.image_width = std::max<std::size_t>(1, cols * 2048 / longer);
    s.image_height = std::max<std::size_t>(1, rows * 2048 / longer);
  } else {
    std::size_t const k = std::max<std::size_t>(1, 256 / longer);
    s.image_width = cols * k;
    s.image_height = rows * k;
  }
  s.width = std::max<std::size_t>(s.image_width, 256);
  s.height = s.image_height + preview_size::legend_height;
  return s;
}

void check_preview_path(std::string const& png, bool overwrite)
{
  std::string ext = fs::path(png).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  HG_EXPECTS(ext == ".png", error_kind::usage, "--preview " + png + ": the preview is a PNG (name it .png)");
  check_output_target(png, overwrite);
  fs::path const dir = fs::path(png).parent_path().empty() ? fs::path(".") : fs::path(png).parent_path();
  std::error_code ec;
  HG_EXPECTS(fs::is_directory(dir, ec), error_kind::output, png + ": directory '" + dir.string() + "' does not exist");
  check_directory_writable(png, dir);
}

void write_preview(std::string const& raster_path, std::string const& png, bool overwrite)
{
  detail::ensure_gdal_registered();
  gdal_error_scope errors;
  GDALDatasetUniquePtr src(GDALDataset::Open(raster_path.c_str(), GDAL_OF_RASTER | GDAL_OF_READONLY));
  HG_EXPECTS(src != nullptr, error_kind::output, png + ": cannot read " + raster_path + " back: " + errors.message());
  auto* band = src->GetRasterBand(1);
  auto const size = preview_size_for(static_cast<std::size_t>(src->GetRasterXSize()),
                                     static_cast<std::size_t>(src->GetRasterYSize()));
  // The grid at the picture's size: GDAL samples the nearest cell (the picture may be narrower
  // than the PNG when the legend needs the width; it is drawn at the left).
  std::size_t const draw_w = size.image_width;
  std::vector<double> v(draw_w * size.image_height);
  HG_EXPECTS(band->RasterIO(GF_Read, 0, 0, src->GetRasterXSize(), src->GetRasterYSize(), v.data(), static_cast<int>(draw_w),
                         static_cast<int>(size.image_height), GDT_Float64, 0, 0) == CE_None,
          error_kind::output, png + ": reading " + raster_path + ": " + errors.message());
  int has_nodata = 0;
  double const nodata = band->GetNoDataValue(&has_nodata);
  auto const empty = [&](double x) { return std::isnan(x) || (has_nodata != 0 && x == nodata); };
  double lo = HUGE_VAL, hi = -HUGE_VAL;
  for (double const x : v) {
    if (!empty(x)) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  if (!(lo <= hi)) { lo = hi = 0.0; }

  canvas c(size.width, size.height);
  for (std::size_t y = 0; y < size.image_height; ++y) {
    for (std::size_t x = 0; x < draw_w; ++x) {
      double const value = v[y * draw_w + x];
      c.set(x, y, empty(value) ? nodata_colour : ramp(hi > lo ? (value - lo) / (hi - lo) : 0.5));
    }
  }
  // Legend: the ramp from lo to hi with its end values, then the nodata swatch.
  std::size_t const top = size.image_height + 4;
  c.fill(0, size.image_height, size.width, preview_size::legend_height, background);
  std::size_t const bar = std::min<std::size_t>(size.width - 8, 128);
  for (std::size_t x = 0; x < bar; ++x) { c.fill(4 + x, top, 1, 12, ramp(static_cast<double>(x) / static_cast<double>(bar - 1))); }
  c.text(4, top + 16, label(lo));
  std::string const high = label(hi);
  c.text(4 + bar - std::min(bar, high.size() * 8), top + 16, high);
  std::size_t const swatch = 4 + bar + 12;
  c.fill(swatch, top, 12, 12, nodata_colour);
  c.text(swatch, top + 16, "nodata");

  GDALDriver* mem = GetGDALDriverManager()->GetDriverByName("MEM");
  GDALDriver* png_driver = GetGDALDriverManager()->GetDriverByName("PNG");
  HG_EXPECTS(mem != nullptr && png_driver != nullptr, error_kind::output, png + ": GDAL lacks the MEM or PNG driver");
  GDALDatasetUniquePtr picture(mem->Create("", static_cast<int>(size.width), static_cast<int>(size.height), 3, GDT_Byte, nullptr));
  HG_EXPECTS(picture != nullptr, error_kind::output, png + ": " + errors.message());
  HG_EXPECTS(picture->RasterIO(GF_Write, 0, 0, static_cast<int>(size.width), static_cast<int>(size.height), c.data(),
                            static_cast<int>(size.width), static_cast<int>(size.height), GDT_Byte, 3, nullptr, 0, 0, 0,
                            nullptr) == CE_None,
          error_kind::output, png + ": " + errors.message());
  check_output_target(png, overwrite);
  fs::path const target(png);
  fs::path const temp = hidden_temporary_path(png);
  char const* const options[] = {"WORLDFILE=NO", nullptr};
  GDALDatasetUniquePtr written(png_driver->CreateCopy(temp.c_str(), picture.get(), FALSE, const_cast<char**>(options), nullptr, nullptr));
  // GDAL 3.6 has no GDALDataset::Close(): the file is complete once the dataset is closed, and a
  // failure of the last write shows as an error in the scope.
  bool ok = written != nullptr;
  written.reset();
  ok = ok && !errors.failed();
  std::error_code ec;
  fs::remove(fs::path(temp.string() + ".aux.xml"), ec);
  if (!ok) {
    fs::remove(temp, ec);
    throw error(error_kind::output, png + ": " + errors.message());
  }
  fs::rename(temp, target, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw error(error_kind::output, png + ": cannot rename the preview into place");
  }
}

}  // namespace heightgrid::io
