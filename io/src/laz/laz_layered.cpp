#include "laz_layered.hpp"
#include "laz_layered_items.hpp"
#include "laz_layered_point14.hpp"
#include "laz_layered_support.hpp"

#include <algorithm>
#include <array>
#include <bitset>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// Layout of a layered chunk (all integers little-endian):
//   1. the first point, raw: vlr.record_length() bytes, every item exactly as in the LAS file;
//   2. u32: the number of points in the chunk, the raw first point included;
//   3. for each item in VLR order, the byte size (u32) of each of its layers:
//        point14: 9 layers: channel/returns/XY, Z, classification, flags, intensity,
//                 scan angle, user data, point source ID, GPS time;
//        rgb14: 1 (RGB); rgbnir14: 2 (RGB, NIR); byte14: one per extra byte;
//        wavepacket14: 1;
//   4. the layers' bytes, in the same order.
// Every non-empty layer is read by its own arithmetic decoder. An empty layer means that the
// attribute keeps the first point's value for the whole chunk.
//
// Each item keeps one set of models and one "previous value" per scanner channel (0-3): a
// point is predicted from the previous point of the same channel. The channel comes from the
// point14 channel/returns/XY layer, which is why that layer is always decoded. A channel's
// state is (re)initialised the first time the channel occurs in a chunk, from the previous
// value of the channel in use just before.

namespace heightgrid::io::laz {
namespace {

// ------------------------------------------------------------------------------------------
// The chunk
// ------------------------------------------------------------------------------------------

/// One item of the record, where its bytes and layer sizes are.
struct item_plan {
  item_type type;
  bool version3;
  std::size_t offset;       // in the record
  std::size_t size;         // bytes in the record
  std::size_t first_layer;  // index into the chunk's layer list
  std::size_t layers;
};

std::size_t layers_of(laz_item const& item)
{
  switch (item.type) {
    case item_type::point14: return point14_layer_count;
    case item_type::rgb14: return 1;
    case item_type::rgbnir14: return 2;
    case item_type::byte14: return item.size;
    case item_type::wavepacket14: return 1;
    default: return 0;
  }
}

/// Holds every model between chunks (one per thread) so that a chunk resets models instead of
/// allocating them.
class layered_chunk_decoder {
 public:
  std::size_t decode(laz_vlr_info const& vlr, std::uint8_t const* data, std::size_t size,
                     std::size_t expected_points, std::size_t max_points, std::uint8_t* records,
                     field_selection const& fields, std::size_t* consumed)
  {
    plan_items(vlr);
    std::size_t const stride = record_length_;

    // Header: raw first point, point count, layer sizes.
    std::size_t const header = stride + 4 + 4 * layer_count_;
    if (size < header) {
      throw decode_error("LAZ layered chunk: " + std::to_string(size) +
                         " bytes cannot hold the first point, point count and " +
                         std::to_string(layer_count_) + " layer sizes (" +
                         std::to_string(header) + " bytes)");
    }
    std::uint8_t const* raw = data;
    std::uint32_t const points = load_u32(data + stride);
    if (points == 0) {
      throw decode_error("LAZ layered chunk: point count is 0 but the chunk starts with a point");
    }
    if (points > max_points) {
      throw decode_error("LAZ layered chunk: holds " + std::to_string(points) +
                         " points, more than the " + std::to_string(max_points) +
                         " the chunk table allows");
    }
    if (expected_points != 0 && points != expected_points) {
      throw decode_error("LAZ layered chunk: holds " + std::to_string(points) +
                         " points but the chunk table says " + std::to_string(expected_points));
    }
    layers_.resize(layer_count_);
    std::uint64_t position = header;
    for (std::size_t l = 0; l < layer_count_; ++l) {
      std::uint32_t const bytes = load_u32(data + stride + 4 + 4 * l);
      if (bytes > size - position) {
        throw decode_error("LAZ layered chunk: layer " + std::to_string(l) + " of " +
                           std::to_string(bytes) + " bytes at offset " + std::to_string(position) +
                           " runs past the end of the " + std::to_string(size) + "-byte chunk");
      }
      layers_[l] = {data + position, bytes};
      position += bytes;
    }

    // point14 first: it writes the scanner channel that the other items follow.
    item_plan const& base = items_.front();
    std::array<layer_bytes, point14_layer_count> point_layers;
    for (unsigned l = 0; l < point14_layer_count; ++l) { point_layers[l] = layers_[base.first_layer + l]; }
    point_.start(point_layers, raw, fields, records, points);
    point_.decode(records, stride, points);
    point_.check_overrun();
    unsigned const first_channel = channel_of_record(records);

    for (std::size_t k = 1; k < items_.size(); ++k) {
      item_plan const& it = items_[k];
      layer_bytes const* layers = layers_.data() + it.first_layer;
      std::uint8_t const* item_raw = raw + it.offset;
      switch (it.type) {
        case item_type::rgb14:
          rgb_.decode(layers[0], nullptr, fields.rgb, false, it.version3, item_raw, records,
                      it.offset, stride, points, first_channel);
          rgb_.check_overrun();
          break;
        case item_type::rgbnir14:
          rgb_.decode(layers[0], &layers[1], fields.rgb, fields.nir, it.version3, item_raw,
                      records, it.offset, stride, points, first_channel);
          rgb_.check_overrun();
          break;
        case item_type::byte14:
          bytes_.decode(layers, it.size, fields.extra_bytes, it.version3, item_raw, records,
                        it.offset, stride, points, first_channel);
          bytes_.check_overrun();
          break;
        case item_type::wavepacket14:
          wave_.decode(layers[0], fields.wavepacket, it.version3, item_raw, records, it.offset,
                       stride, points, first_channel);
          wave_.check_overrun();
          break;
        default: break;  // plan_items() admits nothing else
      }
    }

    if (consumed) *consumed = static_cast<std::size_t>(position);
    return points;
  }

 private:
  /// Checks the item list and lays the items out in the record.
  void plan_items(laz_vlr_info const& vlr)
  {
    if (vlr.items.empty() || vlr.items.front().type != item_type::point14) {
      throw decode_error("LAZ layered chunk: the first item must be point14, the items are " +
                         (vlr.items.empty() ? std::string("none") : describe_items(vlr)));
    }
    items_.clear();
    std::size_t offset = 0;
    std::size_t layers = 0;
    bool seen_rgb = false, seen_bytes = false, seen_wave = false;
    for (std::size_t k = 0; k < vlr.items.size(); ++k) {
      laz_item const& item = vlr.items[k];
      std::size_t expected_size = 0;
      bool* seen = nullptr;
      switch (item.type) {
        case item_type::point14: expected_size = point14_size; break;
        case item_type::rgb14: expected_size = 6; seen = &seen_rgb; break;
        case item_type::rgbnir14: expected_size = 8; seen = &seen_rgb; break;
        case item_type::wavepacket14: expected_size = wavepacket_size; seen = &seen_wave; break;
        case item_type::byte14: expected_size = item.size; seen = &seen_bytes; break;
        default:
          throw decode_error("LAZ layered chunk: item " + describe(item.type, item.version) +
                             " cannot be part of a layered (compressor 3) record");
      }
      if (item.version != 3 && item.version != 4) {
        throw decode_error("LAZ layered chunk: item " + describe(item.type, item.version) +
                           " is not supported (versions 3 and 4 are)");
      }
      if (item.size != expected_size || item.size == 0) {
        throw decode_error("LAZ layered chunk: item " + describe(item.type, item.version) +
                           " has " + std::to_string(item.size) + " bytes, expected " +
                           std::to_string(expected_size));
      }
      if ((k == 0) != (item.type == item_type::point14) || (seen && *seen)) {
        throw decode_error("LAZ layered chunk: item " + describe(item.type, item.version) +
                           " is out of place in " + describe_items(vlr));
      }
      if (seen) *seen = true;
      items_.push_back({item.type, item.version == 3, offset, item.size, layers, layers_of(item)});
      offset += item.size;
      layers += layers_of(item);
    }
    record_length_ = offset;
    layer_count_ = layers;
  }

  std::vector<item_plan> items_;
  std::size_t record_length_ = 0;
  std::size_t layer_count_ = 0;
  std::vector<layer_bytes> layers_;
  point14_decoder point_;
  rgb_decoder rgb_;
  byte_decoder bytes_;
  wavepacket_decoder wave_;
};

}  // namespace

std::size_t decode_layered_chunk(laz_vlr_info const& vlr, std::uint8_t const* data,
                                 std::size_t size, std::size_t expected_points,
                                 std::size_t max_points, std::uint8_t* records,
                                 field_selection const& fields, std::size_t* consumed)
{
  // One decoder per thread keeps the models' memory from chunk to chunk; every chunk resets
  // what it uses, so nothing carries over between chunks or files.
  thread_local layered_chunk_decoder decoder;
  return decoder.decode(vlr, data, size, expected_points, max_points, records, fields, consumed);
}

}  // namespace heightgrid::io::laz
