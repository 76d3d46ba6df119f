// The writer's options and output checks (raster_options.hpp), and the public functions of
// geotiff_writer.hpp that need no dataset: data type names, the format from a path, the inputs an
// output must not replace, check_output_path.

#include "gdal/raster_options.hpp"

#include "heightgrid/core/error.hpp"
#include "heightgrid/core/output_path.hpp"

#include "gdal/gdal_internal.hpp"

#include <gdal_priv.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

namespace heightgrid::io {
namespace fs = std::filesystem;

namespace {

void CPL_STDCALL collect_gdal_message(CPLErr level, CPLErrorNum, char const* message)
{
  if (level < CE_Warning) { return; }
  static_cast<std::vector<std::string>*>(CPLGetErrorHandlerUserData())->emplace_back(message);
}

/// (device, inode) of an existing file, or nothing.
std::optional<std::pair<std::uint64_t, std::uint64_t>> identity_of(std::string const& path)
{
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) { return std::nullopt; }
  return std::pair<std::uint64_t, std::uint64_t>{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

}  // namespace

namespace detail {

bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept
{
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) == std::toupper(static_cast<unsigned char>(y));
         });
}

output_format parse_format(std::string const& format)
{
  if (equals_ignoring_case(format, "GTiff")) { return output_format::gtiff; }
  if (equals_ignoring_case(format, "COG")) { return output_format::cog; }
  throw error(error_kind::usage, "--of: unsupported output format '" + format + "' (expected GTiff or COG)");
}

void check_creation_options(std::vector<std::string> const& options)
{
  for (auto const& option : options) {
    auto const eq = option.find('=');
    HG_EXPECTS(eq != std::string::npos && eq > 0, error_kind::usage, "--co: expected KEY=VALUE, got '" + option + "'");
  }
}

CPLStringList merged_creation_options(output_format format, std::vector<std::string> const& user)
{
  CPLStringList list;
  if (format == output_format::gtiff) {
    list.SetNameValue("TILED", "YES");
    // The bands stored apart: each band's blocks go to the compression threads as they are
    // (pixel-interleaved ones are assembled from every band's on one thread: half the write time of
    // eight bands; which layout is smaller depends on the bands; docs/benchmarks-history.md, "Shape metrics").
    list.SetNameValue("INTERLEAVE", "BAND");
  }
  list.SetNameValue("COMPRESS", "DEFLATE");
  list.SetNameValue("BIGTIFF", "IF_SAFER");
  // Overviews of a COG should hold real cell values: a cubic kernel would invent negative
  // ranges and fractional counts.
  if (format == output_format::cog) { list.SetNameValue("RESAMPLING", "NEAREST"); }
  // GDAL compresses blocks on this many worker threads as they leave its cache (and builds COG
  // overviews on them); DEFLATE on one thread is what a large grid's write waits for.
  list.SetNameValue("NUM_THREADS", "ALL_CPUS");
  for (auto const& option : user) {
    auto const eq = option.find('=');
    // GDAL reads keys in any case; upper case keeps the list as the user's GDAL docs spell it.
    std::string key = option.substr(0, eq);
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    list.SetNameValue(key.c_str(), option.substr(eq + 1).c_str());
  }
  // DEFLATE at its fastest level, without a predictor, unless the user names a level or a predictor.
  // Measured on point-cloud grids (docs/benchmarks.md, "End to end", GeoTIFF defaults): level 1 compresses
  // 3-5x faster than GDAL's default 6 for 5-11 % more bytes, and the predictors GDAL offers make
  // these rasters larger, not smaller (sparse cells between nodata, noisy heights): PREDICTOR=3
  // gave 1.3-3x the bytes of no predictor on every real point cloud tried.
  if (equals_ignoring_case(list.FetchNameValueDef("COMPRESS", "NONE"), "DEFLATE")) {
    char const* const level = format == output_format::cog ? "LEVEL" : "ZLEVEL";
    if (list.FetchNameValue(level) == nullptr) { list.SetNameValue(level, "1"); }
  }
  return list;
}

// Compressed although read once: the grid can be larger than memory.
CPLStringList cog_source_options(CPLStringList const& cog, GDALDriver& gtiff)
{
  CPLStringList list;
  std::string const block = cog.FetchNameValueDef("BLOCKSIZE", "512");
  list.SetNameValue("TILED", "YES");
  list.SetNameValue("BLOCKXSIZE", block.c_str());
  list.SetNameValue("BLOCKYSIZE", block.c_str());
  list.SetNameValue("BIGTIFF", "IF_SAFER");
  list.SetNameValue("NUM_THREADS", cog.FetchNameValueDef("NUM_THREADS", "ALL_CPUS"));
  char const* codecs = gtiff.GetMetadataItem(GDAL_DMD_CREATIONOPTIONLIST);
  if (codecs != nullptr && std::string_view(codecs).find("ZSTD") != std::string_view::npos) {
    list.SetNameValue("COMPRESS", "ZSTD");
    list.SetNameValue("ZSTD_LEVEL", "1");
  } else {
    list.SetNameValue("COMPRESS", "DEFLATE");
    list.SetNameValue("ZLEVEL", "1");
  }
  return list;
}

void probe_creation_options(output_format format, std::vector<std::string> const& user)
{
  if (user.empty()) { return; }
  detail::ensure_gdal_registered();
  char const* const name = format == output_format::cog ? "COG" : "GTiff";
  auto* driver = GetGDALDriverManager()->GetDriverByName(name);
  auto* gtiff = GetGDALDriverManager()->GetDriverByName("GTiff");
  auto* mem = GetGDALDriverManager()->GetDriverByName("MEM");
  if (driver == nullptr || gtiff == nullptr || mem == nullptr) { return; }  // reported when writing
  std::string const probe = "/vsimem/heightgrid-co-probe-" + std::to_string(::getpid()) + ".tif";
  for (auto const& option : user) {
    CPLStringList one;
    one.AddString(option.c_str());
    std::vector<std::string> said;
    CPLPushErrorHandlerEx(collect_gdal_message, &said);
    bool ok = GDALValidateCreationOptions(driver, one.List()) != FALSE;
    if (ok) {
      if (format == output_format::cog) {
        GDALDatasetUniquePtr src(mem->Create("", 1, 1, 1, GDT_Float32, nullptr));
        GDALDatasetUniquePtr out(src ? driver->CreateCopy(probe.c_str(), src.get(), FALSE, one.List(), nullptr, nullptr)
                                     : nullptr);
        ok = out != nullptr;
      } else {
        // With the defaults the writer adds (TILED=YES makes BLOCKXSIZE matter).
        auto const merged = merged_creation_options(format, {option});
        GDALDatasetUniquePtr out(gtiff->Create(probe.c_str(), 1, 1, 1, GDT_Float32, merged.List()));
        ok = out != nullptr;
      }
      VSIUnlink(probe.c_str());
    }
    CPLPopErrorHandler();
    if (!ok) {
      std::string why;
      for (auto const& m : said) { why += (why.empty() ? "" : "; ") + m; }
      throw error(error_kind::usage, "--co: '" + option + "' is not a valid " + name + " creation option" +
                                       (why.empty() ? std::string() : ": " + why));
    }
  }
}


}  // namespace detail

using detail::equals_ignoring_case;
using detail::parse_format;
using detail::check_creation_options;
using detail::probe_creation_options;

std::string_view raster_data_type_name(raster_data_type type) noexcept
{
  switch (type) {
    case raster_data_type::uint32: return "UInt32";
    case raster_data_type::float32: return "Float32";
    case raster_data_type::float64: return "Float64";
  }
  return "?";
}

raster_data_type parse_raster_data_type(std::string const& name)
{
  for (auto const type : {raster_data_type::float32, raster_data_type::float64, raster_data_type::uint32}) {
    if (equals_ignoring_case(name, std::string(raster_data_type_name(type)))) { return type; }
  }
  throw error(error_kind::usage, "--ot: '" + name + "' is not an output type heightgrid writes (Float32, Float64, or "
                                 "UInt32 for a count band alone)");
}

std::string output_format_for(std::string const& path, std::string const& requested)
{
  std::string ext = fs::path(path).extension().string();
  if (!ext.empty()) { ext.erase(0, 1); }
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!requested.empty()) { (void)parse_format(requested); }  // GTiff or COG, else a usage error
  if (ext.empty()) { return requested.empty() ? std::string("GTiff") : requested; }
  // The raster drivers that create files with this extension (GDAL's DMD_EXTENSIONS), as
  // gdal_translate guesses a format; GDAL >= 3.9 has GDALGetOutputDriversForDatasetName, 3.6 not.
  detail::ensure_gdal_registered();
  std::vector<std::string> drivers;
  auto* manager = GetGDALDriverManager();
  for (int i = 0; i < manager->GetDriverCount(); ++i) {
    auto* d = manager->GetDriver(i);
    if (d->GetMetadataItem(GDAL_DCAP_RASTER) == nullptr ||
        (d->GetMetadataItem(GDAL_DCAP_CREATE) == nullptr && d->GetMetadataItem(GDAL_DCAP_CREATECOPY) == nullptr)) {
      continue;
    }
    CPLStringList const exts(CSLTokenizeString(d->GetMetadataItem(GDAL_DMD_EXTENSIONS)));
    for (int e = 0; e < exts.size(); ++e) {
      if (equals_ignoring_case(exts[e], ext)) { drivers.emplace_back(d->GetDescription()); }
    }
  }
  if (drivers.empty()) { return requested.empty() ? std::string("GTiff") : requested; }  // ".out": as GDAL, GTiff
  auto const is = [&](char const* name) {
    return std::any_of(drivers.begin(), drivers.end(), [&](std::string const& d) { return equals_ignoring_case(d, name); });
  };
  if (!requested.empty()) {
    HG_EXPECTS(is(requested.c_str()), error_kind::usage,
            path + ": the extension ." + ext + " is GDAL's " + drivers.front() + " format, not " + requested +
              " (--of " + requested + "); name the file ." + "tif or drop --of");
    return requested;
  }
  HG_EXPECTS(is("GTiff"), error_kind::usage,
          path + ": the extension ." + ext + " is GDAL's " + drivers.front() + " format, which heightgrid does not write "
          "(its bands are Float32: GTiff or COG, .tif); use --preview FILE.png for a picture");
  return "GTiff";
}

struct input_files::index {
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> existing;  ///< by (device, inode)
  std::map<fs::path, std::string> missing;                                  ///< by resolved path
};

input_files::input_files(std::vector<std::string> const& paths)
{
  auto built = std::make_shared<index>();
  for (auto const& p : paths) {
    if (auto const id = identity_of(p)) {
      built->existing.emplace(*id, p);
      continue;
    }
    std::error_code ec;
    auto resolved = fs::weakly_canonical(p, ec);
    if (!ec) { built->missing.emplace(std::move(resolved), p); }
  }
  index_ = std::move(built);
}

std::string const* input_files::same_as(std::string const& path) const
{
  if (!index_) { return nullptr; }
  if (auto const id = identity_of(path)) {
    auto const it = index_->existing.find(*id);
    return it == index_->existing.end() ? nullptr : &it->second;
  }
  // A path that does not exist yet can only be an input that does not exist either.
  if (index_->missing.empty()) { return nullptr; }
  std::error_code ec;
  auto const resolved = fs::weakly_canonical(path, ec);
  if (ec) { return nullptr; }
  auto const it = index_->missing.find(resolved);
  return it == index_->missing.end() ? nullptr : &it->second;
}

void check_output_path(std::string const& path, raster_write_options const& options)
{
  auto const format = parse_format(options.format);
  check_creation_options(options.creation_options);
  probe_creation_options(format, options.creation_options);
  HG_EXPECTS(!path.empty(), error_kind::usage, "the output path is empty");
  fs::path const target(path);
  // Before the existence test, so that an input is never offered to --overwrite.
  if (auto const* input = options.inputs.same_as(path)) {
    throw error(error_kind::output, path + ": output is the input '" + *input + "'; refusing to replace it");
  }
  std::error_code ec;
  check_output_target(path, options.overwrite);
  fs::path const dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  HG_EXPECTS(fs::is_directory(dir, ec), error_kind::output,
          path + ": directory '" + dir.string() + "' does not exist");
  check_directory_writable(path, dir);
}


}  // namespace heightgrid::io
