#include "heightgrid/io/las_crs.hpp"

#include "gdal/gdal_internal.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"
#include "las/las_layout.hpp"

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_vsi.h>
#include <gdal.h>
#include <ogr_spatialref.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>

namespace heightgrid::io {
namespace {

namespace layout = las_layout;

// TIFF 6.0 field types and the tags of a minimal strip image.
constexpr std::uint16_t tiff_ascii = 2;
constexpr std::uint16_t tiff_short = 3;
constexpr std::uint16_t tiff_long = 4;
constexpr std::uint16_t tiff_double = 12;
constexpr std::uint16_t tag_image_width = 256;
constexpr std::uint16_t tag_image_length = 257;
constexpr std::uint16_t tag_bits_per_sample = 258;
constexpr std::uint16_t tag_compression = 259;
constexpr std::uint16_t tag_photometric = 262;
constexpr std::uint16_t tag_strip_offsets = 273;
constexpr std::uint16_t tag_samples_per_pixel = 277;
constexpr std::uint16_t tag_rows_per_strip = 278;
constexpr std::uint16_t tag_strip_byte_counts = 279;
// The GeoTIFF tags carry the same numbers as the LAS record ids.
constexpr std::uint16_t tag_geo_key_directory = layout::geo_key_directory_record_id;
constexpr std::uint16_t tag_geo_double_params = layout::geo_double_params_record_id;
constexpr std::uint16_t tag_geo_ascii_params = layout::geo_ascii_params_record_id;
constexpr std::uint16_t gt_model_type_geo_key = 1024;
constexpr std::uint16_t gt_citation_geo_key = 1026;
constexpr std::uint16_t pcs_citation_geo_key = 3073;
constexpr std::uint16_t vertical_units_geo_key = 4099;
constexpr std::uint16_t user_defined_geo_value = 32767;
constexpr std::uint16_t model_type_projected = 1;
constexpr std::uint16_t model_type_geographic = 2;

std::size_t tiff_type_size(std::uint16_t type) noexcept
{
  switch (type) {
    case tiff_ascii: return 1;
    case tiff_short: return 2;
    case tiff_long: return 4;
    case tiff_double: return 8;
    default: return 0;
  }
}

/// Sets a GDAL configuration option for this thread only, restoring the previous value.
class scoped_thread_config {
 public:
  scoped_thread_config(char const* key, char const* value) : key_(key)
  {
    if (char const* old = CPLGetThreadLocalConfigOption(key, nullptr)) { old_ = old; }
    CPLSetThreadLocalConfigOption(key, value);
  }
  ~scoped_thread_config() { CPLSetThreadLocalConfigOption(key_, old_ ? old_->c_str() : nullptr); }
  scoped_thread_config(scoped_thread_config const&) = delete;
  scoped_thread_config& operator=(scoped_thread_config const&) = delete;

 private:
  char const* key_;
  std::optional<std::string> old_;
};

/// A /vsimem/ file that is removed (with any side-car GDAL wrote next to it) when it goes away.
class vsimem_file {
 public:
  vsimem_file()
  {
    static std::atomic<unsigned long> counter{0};
    name_ = "/vsimem/heightgrid_las_crs_" + std::to_string(counter.fetch_add(1)) + ".tif";
  }
  ~vsimem_file()
  {
    VSIUnlink(name_.c_str());
    VSIUnlink((name_ + ".aux.xml").c_str());
  }
  vsimem_file(vsimem_file const&) = delete;
  vsimem_file& operator=(vsimem_file const&) = delete;

  [[nodiscard]] char const* name() const noexcept { return name_.c_str(); }

 private:
  std::string name_;
};

struct cpl_string_free {
  void operator()(char* s) const noexcept { CPLFree(s); }
};

GDALDriverH gtiff_driver()
{
  detail::ensure_gdal_registered();
  return GDALGetDriverByName("GTiff");
}

std::string units_name_of_epsg(std::uint16_t code)
{
  switch (code) {
    case 9001: return "metre";
    case 9002: return "foot";
    case 9003: return "US survey foot";
    default: return "EPSG unit " + std::to_string(code);
  }
}

/// One entry of a GeoTIFF key directory: where the value is (0: `value` itself, 34736: index
/// into the doubles, 34737: offset into the ASCII parameters) and how many values there are.
struct geo_key {
  std::uint16_t location;
  std::uint16_t count;
  std::uint16_t value;
};

std::optional<geo_key> find_geo_key(las_geotiff_keys const& keys, std::uint16_t id)
{
  auto const& d = keys.directory;
  if (d.size() < 4) { return std::nullopt; }
  // Header {version, revision, minor revision, number of keys}, then 4 shorts per key.
  std::size_t const n = std::min<std::size_t>(d[3], (d.size() - 4) / 4);
  for (std::size_t k = 0; k < n; ++k) {
    std::uint16_t const* e = d.data() + 4 + 4 * k;
    if (e[0] == id) { return geo_key{e[1], e[2], e[3]}; }
  }
  return std::nullopt;
}

/// VerticalUnitsGeoKey, when stored directly in the key directory.
std::string vertical_units_from_keys(las_geotiff_keys const& keys)
{
  auto const k = find_geo_key(keys, vertical_units_geo_key);
  if (!k || k->location != 0 || k->value == 0 || k->value == user_defined_geo_value) { return {}; }
  return units_name_of_epsg(k->value);
}

/// The ASCII value of a key, without GeoTIFF's trailing '|' separator.
std::string ascii_key(las_geotiff_keys const& keys, std::uint16_t id)
{
  auto const k = find_geo_key(keys, id);
  if (!k || k->location != tag_geo_ascii_params || k->value >= keys.ascii.size()) { return {}; }
  std::string s = keys.ascii.substr(k->value, k->count);
  while (!s.empty() && (s.back() == '|' || s.back() == '\0' || s.back() == ' ')) { s.pop_back(); }
  return s;
}

/// Gridding needs a horizontal CRS. GDAL turns keys it cannot place (a user-defined system
/// without parameters, or a unit code where an EPSG code belongs) into a LOCAL_CS / engineering
/// CRS, possibly inside a compound one: that is a name, not a georeference.
bool usable_horizontally(OGRSpatialReference const& srs)
{
  return !srs.IsEmpty() && (srs.IsProjected() || srs.IsGeographic() || srs.IsGeocentric());
}

/// The GeoTIFF keys through GDAL's GeoTIFF driver: the keys go into a 1x1 TIFF in /vsimem/ and
/// GDAL (libgeotiff plus its EPSG/ESRI handling) says what CRS they describe. Returns nothing
/// and sets `why` when it cannot make a real CRS of them.
std::optional<OGRSpatialReference> srs_from_geotiff_keys(las_geotiff_keys const& keys, std::string& why)
{
  gdal_error_scope const gdal_errors;
  std::vector<std::uint8_t> tiff;
  try {
    tiff = geotiff_keys_as_tiff(keys);
  } catch (error const& e) {
    why = e.what();
    return std::nullopt;
  }
  if (gtiff_driver() == nullptr) {
    why = "GDAL has no GTiff driver";
    return std::nullopt;
  }
  // Vertical keys become part of a compound CRS only when asked for.
  scoped_thread_config const compound("GTIFF_REPORT_COMPD_CS", "YES");
  vsimem_file const file;
  VSIFCloseL(VSIFileFromMemBuffer(file.name(), tiff.data(), tiff.size(), FALSE));
  char const* const drivers[] = {"GTiff", nullptr};
  gdal_dataset_ptr const ds(GDALDataset::FromHandle(GDALOpenEx(
    file.name(), GDAL_OF_RASTER | GDAL_OF_READONLY | GDAL_OF_INTERNAL, drivers, nullptr, nullptr)));
  std::optional<OGRSpatialReference> result;
  if (ds == nullptr) {
    why = gdal_errors.message();
  } else if (OGRSpatialReference const* srs = ds->GetSpatialRef()) {
    if (usable_horizontally(*srs)) {
      result = *srs;
    } else {
      why = "GDAL makes only an engineering (local) CRS of them";
    }
  }
  if (result) { return result; }

  // A user-defined system (32767) sometimes names itself usably in its citation. Only the
  // whole-CRS citations count (GTCitation, PCSCitation; not the datum's GeogCitation), and the
  // result must be the kind of CRS the model type key announces.
  auto const model = find_geo_key(keys, gt_model_type_geo_key);
  for (std::uint16_t id : {pcs_citation_geo_key, gt_citation_geo_key}) {
    std::string const citation = ascii_key(keys, id);
    OGRSpatialReference srs;
    if (citation.empty() ||
        srs.SetFromUserInput(citation.c_str(), OGRSpatialReference::SET_FROM_USER_INPUT_LIMITATIONS_get()) !=
          OGRERR_NONE ||
        !usable_horizontally(srs)) {
      continue;
    }
    bool const kind_matches = !model || model->location != 0 ||
                              (model->value == model_type_projected && srs.IsProjected()) ||
                              (model->value == model_type_geographic && srs.IsGeographic() && !srs.IsProjected());
    if (kind_matches) {
      why.clear();
      return srs;
    }
  }
  if (why.empty()) { why = "no EPSG code or definition GDAL understands"; }
  std::string const citation = ascii_key(keys, gt_citation_geo_key);
  if (!citation.empty()) { why += " (citation \"" + citation + "\")"; }
  return std::nullopt;
}

/// A TIFF directory entry with its value bytes (inline or out of line is decided on layout).
struct tiff_entry {
  std::uint16_t tag;
  std::uint16_t type;
  std::uint32_t count;
  std::vector<std::uint8_t> value;
};

tiff_entry short_entry(std::uint16_t tag, std::uint16_t v)
{
  tiff_entry e{tag, tiff_short, 1, std::vector<std::uint8_t>(2)};
  layout::store(e.value.data(), v);
  return e;
}

tiff_entry long_entry(std::uint16_t tag, std::uint32_t v)
{
  tiff_entry e{tag, tiff_long, 1, std::vector<std::uint8_t>(4)};
  layout::store(e.value.data(), v);
  return e;
}

/// The GeoTIFF tags of a classic little-endian TIFF (the form GDAL writes for small files).
las_geotiff_keys geotiff_keys_from_tiff(std::uint8_t const* data, std::size_t size)
{
  auto bad = [] { return error(error_kind::internal, "GDAL wrote a TIFF the LAS writer cannot parse"); };
  if (size < 8 || std::memcmp(data, "II\x2a\x00", 4) != 0) { throw bad(); }
  std::uint32_t const ifd = layout::load<std::uint32_t>(data + 4);
  if (ifd > size || size - ifd < 2) { throw bad(); }
  std::uint16_t const n = layout::load<std::uint16_t>(data + ifd);
  if ((size - ifd - 2) / 12 < n) { throw bad(); }
  las_geotiff_keys keys;
  for (std::uint16_t i = 0; i < n; ++i) {
    std::uint8_t const* e = data + ifd + 2 + 12 * std::size_t{i};
    std::uint16_t const tag = layout::load<std::uint16_t>(e);
    std::uint16_t const type = layout::load<std::uint16_t>(e + 2);
    std::uint32_t const count = layout::load<std::uint32_t>(e + 4);
    if (tag != tag_geo_key_directory && tag != tag_geo_double_params && tag != tag_geo_ascii_params) {
      continue;
    }
    std::size_t const unit = tiff_type_size(type);
    if (unit == 0 || count > size / unit) { throw bad(); }
    std::size_t const bytes = unit * count;
    std::uint8_t const* value = e + 8;
    if (bytes > 4) {
      std::uint32_t const at = layout::load<std::uint32_t>(e + 8);
      if (at > size || size - at < bytes) { throw bad(); }
      value = data + at;
    }
    if (count == 0) { continue; }
    if (tag == tag_geo_key_directory && type == tiff_short) {
      keys.directory.resize(count);
      std::memcpy(keys.directory.data(), value, bytes);
    } else if (tag == tag_geo_double_params && type == tiff_double) {
      keys.doubles.resize(count);
      std::memcpy(keys.doubles.data(), value, bytes);
    } else if (tag == tag_geo_ascii_params && type == tiff_ascii) {
      keys.ascii.assign(reinterpret_cast<char const*>(value), bytes);
    } else {
      throw bad();
    }
  }
  return keys;
}

}  // namespace

std::vector<std::uint8_t> geotiff_keys_as_tiff(las_geotiff_keys const& keys)
{
  std::vector<tiff_entry> entries;
  entries.push_back(short_entry(tag_image_width, 1));
  entries.push_back(short_entry(tag_image_length, 1));
  entries.push_back(short_entry(tag_bits_per_sample, 8));
  entries.push_back(short_entry(tag_compression, 1));   // none
  entries.push_back(short_entry(tag_photometric, 1));   // min-is-black
  entries.push_back(long_entry(tag_strip_offsets, 0));  // patched once the layout is known
  entries.push_back(short_entry(tag_samples_per_pixel, 1));
  entries.push_back(short_entry(tag_rows_per_strip, 1));
  entries.push_back(long_entry(tag_strip_byte_counts, 1));

  // Each GeoTIFF array must stay well inside the 32-bit offsets of a classic TIFF.
  constexpr std::size_t max_array_bytes = std::size_t{64} << 20;
  auto too_large = [](char const* what) {
    return error(error_kind::input, std::string("GeoTIFF ") + what + " record too large");
  };
  if (keys.directory.size() > max_array_bytes / 2) { throw too_large("key directory"); }
  if (keys.doubles.size() > max_array_bytes / 8) { throw too_large("double parameters"); }
  if (keys.ascii.size() >= max_array_bytes) { throw too_large("ASCII parameters"); }

  tiff_entry dir{tag_geo_key_directory, tiff_short, static_cast<std::uint32_t>(keys.directory.size()),
                 std::vector<std::uint8_t>(2 * keys.directory.size())};
  if (!keys.directory.empty()) { std::memcpy(dir.value.data(), keys.directory.data(), dir.value.size()); }
  entries.push_back(std::move(dir));
  if (!keys.doubles.empty()) {
    tiff_entry d{tag_geo_double_params, tiff_double, static_cast<std::uint32_t>(keys.doubles.size()),
                 std::vector<std::uint8_t>(8 * keys.doubles.size())};
    std::memcpy(d.value.data(), keys.doubles.data(), d.value.size());
    entries.push_back(std::move(d));
  }
  if (!keys.ascii.empty()) {
    // TIFF ASCII values end with a NUL; the LAS record usually has one, but need not.
    std::string ascii = keys.ascii;
    if (ascii.back() != '\0') { ascii.push_back('\0'); }
    entries.push_back(tiff_entry{tag_geo_ascii_params, tiff_ascii,
                                 static_cast<std::uint32_t>(ascii.size()),
                                 std::vector<std::uint8_t>(ascii.begin(), ascii.end())});
  }

  // Layout: 8-byte header, the IFD (entries already in ascending tag order), the one pixel,
  // then the out-of-line values, each 8-byte aligned (TIFF only asks for 2).
  std::size_t const ifd_at = 8;
  std::size_t const ifd_size = 2 + 12 * entries.size() + 4;
  std::size_t const pixel_at = ifd_at + ifd_size;
  std::size_t end = pixel_at + 1;
  std::vector<std::size_t> value_at(entries.size(), 0);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].value.size() > 4) {
      end = (end + 7) & ~std::size_t{7};
      value_at[i] = end;
      end += entries[i].value.size();
    }
  }
  std::vector<std::uint8_t> out(end, 0);
  std::memcpy(out.data(), "II\x2a\x00", 4);
  layout::store(out.data() + 4, static_cast<std::uint32_t>(ifd_at));
  layout::store(out.data() + ifd_at, static_cast<std::uint16_t>(entries.size()));
  for (std::size_t i = 0; i < entries.size(); ++i) {
    tiff_entry& e = entries[i];
    if (e.tag == tag_strip_offsets) { layout::store(e.value.data(), static_cast<std::uint32_t>(pixel_at)); }
    std::uint8_t* p = out.data() + ifd_at + 2 + 12 * i;
    layout::store(p, e.tag);
    layout::store(p + 2, e.type);
    layout::store(p + 4, e.count);
    if (e.value.size() > 4) {
      layout::store(p + 8, static_cast<std::uint32_t>(value_at[i]));
      std::memcpy(out.data() + value_at[i], e.value.data(), e.value.size());
    } else if (!e.value.empty()) {
      std::memcpy(p + 8, e.value.data(), e.value.size());
    }
  }
  // The next-IFD offset after the entries stays 0: one image.
  return out;
}

namespace {

las_crs interpret_records(std::string const& wkt_record, bool wkt_in_evlr, las_geotiff_keys const& keys)
{
  las_crs crs;
  gdal_error_scope const gdal_errors;
  std::string note;
  if (!wkt_record.empty()) {
    OGRSpatialReference srs;
    if (srs.importFromWkt(wkt_record.c_str()) == OGRERR_NONE && !srs.IsEmpty()) {
      // The record is passed on verbatim: it is what the file's producer wrote.
      crs.wkt = wkt_record;
      crs.source = wkt_in_evlr ? "WKT EVLR" : "WKT VLR";
      crs.vertical_units = detail::vertical_units_of(&srs);
      return crs;
    }
    note = "the WKT CRS record does not parse (" + gdal_errors.message() + ")";
  }
  if (!keys.empty()) {
    std::string why;
    if (auto srs = srs_from_geotiff_keys(keys, why)) {
      crs.wkt = detail::wkt_of(&*srs);
      crs.source = "GeoTIFF keys";
      crs.vertical_units = detail::vertical_units_of(&*srs);
      if (crs.vertical_units.empty()) { crs.vertical_units = vertical_units_from_keys(keys); }
    } else {
      note += (note.empty() ? "" : "; ") + std::string("GeoTIFF keys present but not interpretable: ") + why;
      // The vertical unit key stands on its own even when the horizontal keys are unusable.
      crs.vertical_units = vertical_units_from_keys(keys);
    }
  }
  crs.note = note;
  return crs;
}

/// The CRS records of a file and what interpret_records made of them.
struct remembered_crs {
  std::string wkt_record;
  bool wkt_in_evlr;
  las_geotiff_keys keys;
  las_crs crs;

  [[nodiscard]] bool holds(std::string const& wkt, bool in_evlr, las_geotiff_keys const& k) const
  {
    return wkt_in_evlr == in_evlr && wkt_record == wkt && keys.directory == k.directory && keys.doubles == k.doubles &&
           keys.ascii == k.ascii;
  }
};

/// Distinct records remembered: a catalogue's tiles share one CRS, or a few.
constexpr std::size_t remembered_records = 16;

}  // namespace

las_crs interpret_las_crs(std::string const& wkt_record, bool wkt_in_evlr, las_geotiff_keys const& keys)
{
  // The tiles of a catalogue carry the same records, and interpreting them costs up to a
  // millisecond a file (GeoTIFF keys: a /vsimem/ TIFF opened by GDAL, its CRS built and exported
  // through PROJ, 4 * 10^6 instructions; 30 % of gridding 200 LAZ tiles of 5000 points), so
  // records met before are answered from memory. The answer depends on the records alone (and on
  // GDAL's configuration, which the CLI sets before any input is opened).
  static std::mutex mutex;
  static std::deque<remembered_crs> remembered;  // the most recent first
  {
    std::lock_guard<std::mutex> const lock(mutex);
    for (auto const& r : remembered) {
      if (r.holds(wkt_record, wkt_in_evlr, keys)) { return r.crs; }
    }
  }
  las_crs crs = interpret_records(wkt_record, wkt_in_evlr, keys);
  std::lock_guard<std::mutex> const lock(mutex);
  bool const known = std::any_of(remembered.begin(), remembered.end(),
                                 [&](remembered_crs const& r) { return r.holds(wkt_record, wkt_in_evlr, keys); });
  if (!known) {
    if (remembered.size() == remembered_records) { remembered.pop_back(); }
    remembered.push_front(remembered_crs{wkt_record, wkt_in_evlr, keys, crs});
  }
  return crs;
}

std::string las_wkt_from_crs(std::string const& crs)
{
  gdal_error_scope const gdal_errors;
  OGRSpatialReference srs;
  if (srs.importFromWkt(crs.c_str()) == OGRERR_NONE && !srs.IsEmpty()) { return crs; }
  if (srs.SetFromUserInput(crs.c_str(), OGRSpatialReference::SET_FROM_USER_INPUT_LIMITATIONS_get()) !=
        OGRERR_NONE ||
      srs.IsEmpty()) {
    throw error(error_kind::usage, "CRS \"" + crs.substr(0, 80) + "\" does not parse: " +
                                     gdal_errors.message());
  }
  char* raw = nullptr;
  if (srs.exportToWkt(&raw) != OGRERR_NONE || raw == nullptr) {
    CPLFree(raw);
    throw error(error_kind::usage, "CRS \"" + crs.substr(0, 80) + "\" has no WKT form: " +
                                     gdal_errors.message());
  }
  std::unique_ptr<char, cpl_string_free> const owned(raw);
  return std::string(raw);
}

las_geotiff_keys geotiff_keys_from_crs(std::string const& crs)
{
  gdal_error_scope const gdal_errors;
  OGRSpatialReference srs;
  if (srs.SetFromUserInput(crs.c_str(), OGRSpatialReference::SET_FROM_USER_INPUT_LIMITATIONS_get()) !=
      OGRERR_NONE) {
    throw error(error_kind::usage, "CRS \"" + crs.substr(0, 80) + "\" does not parse: " +
                                     gdal_errors.message());
  }
  GDALDriverH const driver = gtiff_driver();
  if (driver == nullptr) { throw error(error_kind::internal, "GDAL has no GTiff driver"); }
  vsimem_file const file;
  {
    gdal_dataset_ptr const ds(
      GDALDataset::FromHandle(GDALCreate(driver, file.name(), 1, 1, 1, GDT_Byte, nullptr)));
    if (ds == nullptr) {
      throw error(error_kind::internal,
                  "GDAL cannot create an in-memory GeoTIFF: " + gdal_errors.message());
    }
    // A geotransform makes GDAL write the georeferencing tags; only the key tags are kept.
    double geotransform[6] = {0, 1, 0, 0, 0, -1};
    if (ds->SetGeoTransform(geotransform) != CE_None || ds->SetSpatialRef(&srs) != CE_None) {
      throw error(error_kind::usage, "CRS \"" + crs.substr(0, 80) +
                                       "\" cannot be written as GeoTIFF keys: " +
                                       gdal_errors.message());
    }
  }
  vsi_l_offset size = 0;
  GByte const* data = VSIGetMemFileBuffer(file.name(), &size, FALSE);
  if (data == nullptr) { throw error(error_kind::internal, "GDAL wrote no in-memory GeoTIFF"); }
  las_geotiff_keys keys = geotiff_keys_from_tiff(data, static_cast<std::size_t>(size));
  if (keys.empty()) {
    throw error(error_kind::usage, "CRS \"" + crs.substr(0, 80) +
                                     "\" has no GeoTIFF key form; write LAS 1.4 to store it as WKT");
  }
  return keys;
}

}  // namespace heightgrid::io
