// EPT node files of the `binary` and `zstandard` data types: the points of a node as records laid
// out by ept.json's `schema` (each dimension a little-endian signed/unsigned integer or float of its
// size, in schema order, with an optional scale and offset), zstandard-compressed for `zstandard`.

#include "heightgrid/io/ept.hpp"

#include "gdal/gdal_internal.hpp"
#include "heightgrid/core/error.hpp"
#include "heightgrid/core/point_batch.hpp"
#include "heightgrid/core/quote.hpp"
#include "heightgrid/io/gdal_env.hpp"
#include "heightgrid/io/remote.hpp"

#include <cpl_json.h>
#include <cpl_vsi.h>
#include <ogr_spatialref.h>
#include <zstd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

namespace heightgrid::io {
namespace {

enum class value_type : std::uint8_t { i8, i16, i32, i64, u8, u16, u32, u64, f32, f64 };

struct dimension {
  std::string name;
  std::size_t at{0};  ///< byte offset in a record
  value_type type{value_type::i32};
  double scale{1.0};
  double offset{0.0};
};

/// What reading a dataset's node files needs of its ept.json.
struct schema {
  std::string data_type;  ///< binary or zstandard
  std::vector<dimension> dims;
  std::size_t record{0};  ///< bytes of a point
  std::string crs_wkt;
  std::string crs_note;
};

std::string lower(std::string s)
{
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::optional<value_type> type_of(std::string const& type, int size)
{
  if (type == "signed") {
    switch (size) {
      case 1: return value_type::i8;
      case 2: return value_type::i16;
      case 4: return value_type::i32;
      case 8: return value_type::i64;
      default: return std::nullopt;
    }
  }
  if (type == "unsigned") {
    switch (size) {
      case 1: return value_type::u8;
      case 2: return value_type::u16;
      case 4: return value_type::u32;
      case 8: return value_type::u64;
      default: return std::nullopt;
    }
  }
  if (type == "float") {
    if (size == 4) { return value_type::f32; }
    if (size == 8) { return value_type::f64; }
  }
  return std::nullopt;
}

template <typename T>
T load_le(unsigned char const* p) noexcept
{
  T v;
  std::memcpy(&v, p, sizeof v);  // EPT data is little-endian, as is every host heightgrid builds for
  return v;
}

/// The stored value of `d` in the record at `p`, scaled: stored * scale + offset (LAS's rule, the one
/// scaled_coords applies, so an int32 X gives the coordinate a LAZ twin of the node gives).
double value_at(unsigned char const* p, dimension const& d) noexcept
{
  unsigned char const* const q = p + d.at;
  double v = 0.0;
  switch (d.type) {
    case value_type::i8: v = load_le<std::int8_t>(q); break;
    case value_type::i16: v = load_le<std::int16_t>(q); break;
    case value_type::i32: return scaled_coords::apply(load_le<std::int32_t>(q), d.scale, d.offset);
    case value_type::i64: v = static_cast<double>(load_le<std::int64_t>(q)); break;
    case value_type::u8: v = load_le<std::uint8_t>(q); break;
    case value_type::u16: v = load_le<std::uint16_t>(q); break;
    case value_type::u32: v = load_le<std::uint32_t>(q); break;
    case value_type::u64: v = static_cast<double>(load_le<std::uint64_t>(q)); break;
    case value_type::f32: v = load_le<float>(q); break;
    case value_type::f64: v = load_le<double>(q); break;
  }
  return v * d.scale + d.offset;
}

/// A small unsigned attribute (class, return numbers, flags) as the byte LAS stores it; values that
/// do not fit a byte saturate.
std::uint8_t byte_at(unsigned char const* p, dimension const& d) noexcept
{
  double const v = value_at(p, d);
  return !(v > 0.0) ? std::uint8_t{0} : v >= 255.0 ? std::uint8_t{255} : static_cast<std::uint8_t>(v);
}

std::string dataset_of(std::string const& node_path)
{
  auto const at = node_path.rfind("/ept-data/");
  return at == std::string::npos ? std::string(".") : node_path.substr(0, at);
}

/// The CRS of ept.json's `srs`: its `wkt`, else `authority`:`horizontal`(+`vertical`).
void read_srs(CPLJSONObject const& root, schema& s, std::string const& shown)
{
  CPLJSONObject const srs = root.GetObj("srs");
  if (!srs.IsValid()) { return; }
  std::string text = srs.GetString("wkt", "");
  if (text.empty()) {
    std::string const authority = srs.GetString("authority", ""), horizontal = srs.GetString("horizontal", "");
    std::string const vertical = srs.GetString("vertical", "");
    if (authority.empty() || horizontal.empty()) { return; }
    text = authority + ":" + horizontal + (vertical.empty() ? "" : "+" + vertical);
  }
  detail::ensure_gdal_registered();
  gdal_error_scope errors;
  OGRSpatialReference ref;
  if (ref.SetFromUserInput(text.c_str()) != OGRERR_NONE) {
    s.crs_note = shown + ": its srs '" + printable(text) + "' is not understood (" + errors.message() + "); no CRS";
    return;
  }
  s.crs_wkt = detail::wkt_of(&ref);
}

schema parse_schema(std::string const& dataset)
{
  std::string const shown = dataset + "/ept.json";
  CPLJSONDocument doc;
  {
    gdal_error_scope scope;
    if (!doc.Load(remote_path(dataset).value_or(dataset) + "/ept.json")) {
      throw error(error_kind::input, shown + ": cannot read it as JSON: " + scope.message());
    }
  }
  CPLJSONObject const root = doc.GetRoot();
  schema s;
  s.data_type = root.GetString("dataType", "");
  CPLJSONArray const dims = root.GetArray("schema");
  HG_EXPECTS(dims.IsValid() && dims.Size() > 0, error_kind::input, shown + ": no 'schema' array of dimensions");
  for (int i = 0; i < dims.Size(); ++i) {
    CPLJSONObject const d = dims[i];
    std::string const name = d.GetString("name", "");
    std::string const type = d.GetString("type", "");
    int const size = d.GetInteger("size", 0);
    auto const t = type_of(type, size);
    std::string const which = shown + ": schema entry " + std::to_string(i) + " ('" + printable(name) + "')";
    HG_EXPECTS(!name.empty(), error_kind::input, which + " has no name");
    HG_EXPECTS(t.has_value(), error_kind::input,
               which + ": type '" + printable(type) + "' of size " + std::to_string(size) +
                 " is not an EPT type (signed/unsigned of 1, 2, 4 or 8 bytes, float of 4 or 8)");
    dimension dim{name, s.record, *t, d.GetDouble("scale", 1.0), d.GetDouble("offset", 0.0)};
    HG_EXPECTS(std::isfinite(dim.scale) && dim.scale != 0.0 && std::isfinite(dim.offset), error_kind::input,
               which + ": scale and offset must be finite and the scale non-zero");
    s.dims.push_back(dim);
    s.record += static_cast<std::size_t>(size);
  }
  read_srs(root, s, shown);
  return s;
}

/// ept.json's schema, read once per dataset (a job opens every node of it; a remote ept.json would
/// be asked of the server for each).
std::shared_ptr<schema const> schema_of(std::string const& dataset)
{
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<schema const>> cache;
  std::lock_guard<std::mutex> const lock(mutex);
  auto& slot = cache[dataset];
  if (!slot) { slot = std::make_shared<schema const>(parse_schema(dataset)); }
  return slot;
}

/// The whole file, local or through GDAL's VSI layer.
std::vector<unsigned char> read_all(std::string const& path)
{
  std::string const gdal = remote_path(path).value_or(path);
  gdal_error_scope scope;
  VSILFILE* f = VSIFOpenL(gdal.c_str(), "rb");
  if (f == nullptr) { throw error(error_kind::input, path + ": cannot open the EPT node: " + scope.message()); }
  std::vector<unsigned char> out;
  std::size_t got = 0;
  for (;;) {
    out.resize(got + (std::size_t{1} << 20));
    std::size_t const n = VSIFReadL(out.data() + got, 1, out.size() - got, f);
    got += n;
    if (got < out.size()) { break; }
  }
  // A short read is the end of the file, or a failure (GDAL 3.6 has no VSIFErrorL): only the end sets EOF.
  bool const failed = VSIFEofL(f) == 0 || scope.failed();
  VSIFCloseL(f);
  HG_EXPECTS(!failed, error_kind::input, path + ": reading the EPT node failed: " + scope.message());
  out.resize(got);
  if (is_remote(path)) { detail::note_remote_bytes(got); }
  return out;
}

/// Past this many bytes a zstandard node is refused (a 20-byte frame can claim terabytes).
constexpr std::size_t max_node_bytes = std::size_t{1} << 36;

std::vector<unsigned char> unzstd(std::vector<unsigned char> const& in, std::string const& path)
{
  std::unique_ptr<ZSTD_DCtx, std::size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  HG_EXPECTS(ctx != nullptr, error_kind::resource, path + ": cannot start a zstandard decoder");
  std::vector<unsigned char> out(std::max<std::size_t>(in.size() * 4, 1 << 16));
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  ZSTD_outBuffer dst{out.data(), out.size(), 0};
  std::size_t last = 0;
  while (src.pos < src.size) {
    if (dst.pos == dst.size) {
      HG_EXPECTS(out.size() < max_node_bytes, error_kind::input, path + ": decompresses to more than 64 GiB");
      out.resize(out.size() * 2);
      dst.dst = out.data();
      dst.size = out.size();
    }
    last = ZSTD_decompressStream(ctx.get(), &dst, &src);
    HG_EXPECTS(!ZSTD_isError(last), error_kind::input,
               path + ": not zstandard data, or damaged (at compressed byte " + std::to_string(src.pos) +
                 "): " + ZSTD_getErrorName(last));
  }
  // Output still held in the decoder: drain it.
  while (last != 0 && dst.pos == dst.size) {
    HG_EXPECTS(out.size() < max_node_bytes, error_kind::input, path + ": decompresses to more than 64 GiB");
    out.resize(out.size() * 2);
    dst.dst = out.data();
    dst.size = out.size();
    last = ZSTD_decompressStream(ctx.get(), &dst, &src);
    HG_EXPECTS(!ZSTD_isError(last), error_kind::input, path + ": damaged zstandard data: " + ZSTD_getErrorName(last));
  }
  HG_EXPECTS(last == 0, error_kind::input, path + ": the zstandard data is cut short (" +
                                              std::to_string(in.size()) + " bytes end inside a frame)");
  out.resize(dst.pos);
  return out;
}

class ept_node_source final : public point_source {
 public:
  ept_node_source(std::string const& path, std::string const& dimension_name)
    : schema_(schema_of(dataset_of(path)))
  {
    schema const& s = *schema_;
    std::string const shown = dataset_of(path) + "/ept.json";
    HG_EXPECTS(s.data_type == "binary" || s.data_type == "zstandard", error_kind::input,
               path + ": an EPT node of dataType '" + printable(s.data_type) + "' is not binary or zstandard data");
    x_ = find("X");
    y_ = find("Y");
    z_ = find("Z");
    HG_EXPECTS(x_ && y_ && z_, error_kind::input, shown + ": the schema lacks X, Y or Z");
    if (!dimension_name.empty() && lower(dimension_name) != "z") {
      value_ = find(dimension_name);
      if (value_ == nullptr) {
        std::string names;
        for (auto const& d : s.dims) { names += (names.empty() ? "" : ", ") + d.name; }
        throw error(error_kind::input,
                    path + ": no dimension '" + printable(dimension_name) + "' (the EPT schema has " + names + ")");
      }
    } else {
      value_ = z_;
    }
    class_ = find("Classification");
    return_ = find("ReturnNumber");
    returns_ = find("NumberOfReturns");
    class_flags_ = find("ClassFlags");
    synthetic_ = find("Synthetic");
    key_point_ = find("KeyPoint");
    withheld_ = find("Withheld");
    overlap_ = find("Overlap");

    data_ = read_all(path);
    if (s.data_type == "zstandard") { data_ = unzstd(data_, path); }
    HG_EXPECTS(data_.size() % s.record == 0, error_kind::input,
               path + ": " + std::to_string(data_.size()) + " bytes are not a whole number of " +
                 std::to_string(s.record) + "-byte points (the schema of " + shown + ")");
    count_ = data_.size() / s.record;
    info_.path = path;
    info_.format = "EPT " + s.data_type + " node";
    info_.crs_wkt = s.crs_wkt;
    info_.point_count = count_;
    if (!s.crs_note.empty()) { info_.notes.push_back(s.crs_note); }
  }

  [[nodiscard]] source_info const& info() const override { return info_; }

  bool read(point_chunk& chunk, std::size_t max_points) override
  {
    chunk.clear();
    std::size_t const n = std::min<std::size_t>(max_points, count_ - next_);
    if (n == 0) { return false; }
    std::size_t const record = schema_->record;
    unsigned char const* p = data_.data() + next_ * record;
    chunk.x.resize(n);
    chunk.y.resize(n);
    chunk.z.resize(n);
    if (class_) { chunk.classification.resize(n); }
    bool const returns = return_ != nullptr && returns_ != nullptr;
    if (returns) {
      chunk.return_number.resize(n);
      chunk.number_of_returns.resize(n);
    }
    bool const flags = class_flags_ || synthetic_ || key_point_ || withheld_ || overlap_;
    if (flags) { chunk.flags.resize(n); }
    for (std::size_t i = 0; i < n; ++i, p += record) {
      chunk.x[i] = value_at(p, *x_);
      chunk.y[i] = value_at(p, *y_);
      chunk.z[i] = value_at(p, *value_);
      if (class_) { chunk.classification[i] = byte_at(p, *class_); }
      if (returns) {
        chunk.return_number[i] = byte_at(p, *return_);
        chunk.number_of_returns[i] = byte_at(p, *returns_);
      }
      if (flags) {
        std::uint8_t f = class_flags_ ? static_cast<std::uint8_t>(byte_at(p, *class_flags_) & 0x0f) : 0;
        if (synthetic_ && byte_at(p, *synthetic_) != 0) { f |= point_flag::synthetic; }
        if (key_point_ && byte_at(p, *key_point_) != 0) { f |= point_flag::key_point; }
        if (withheld_ && byte_at(p, *withheld_) != 0) { f |= point_flag::withheld; }
        if (overlap_ && byte_at(p, *overlap_) != 0) { f |= point_flag::overlap; }
        chunk.flags[i] = f;
      }
    }
    next_ += n;
    return true;
  }

 private:
  [[nodiscard]] dimension const* find(std::string const& name) const
  {
    std::string const want = lower(name);
    for (auto const& d : schema_->dims) {
      if (lower(d.name) == want) { return &d; }
    }
    return nullptr;
  }

  std::shared_ptr<schema const> schema_;
  dimension const *x_{nullptr}, *y_{nullptr}, *z_{nullptr}, *value_{nullptr};
  dimension const *class_{nullptr}, *return_{nullptr}, *returns_{nullptr};
  dimension const *class_flags_{nullptr}, *synthetic_{nullptr}, *key_point_{nullptr}, *withheld_{nullptr},
    *overlap_{nullptr};
  std::vector<unsigned char> data_;
  std::size_t count_{0}, next_{0};
  source_info info_;
};

}  // namespace

bool is_ept_node(std::string const& path)
{
  std::string const p = path.substr(0, path.find_first_of("?#"));
  auto const at = p.rfind("/ept-data/");
  if (at == std::string::npos) { return false; }
  std::string const ext = remote_extension(p);
  return ext == ".bin" || ext == ".zst";
}

std::unique_ptr<point_source> open_ept_node_source(std::string const& path, std::string const& dimension)
{
  return std::make_unique<ept_node_source>(path, dimension);
}

}  // namespace heightgrid::io
