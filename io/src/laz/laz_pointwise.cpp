#include "laz_pointwise.hpp"
#include "laz_pointwise_items.hpp"
#include "laz_pointwise_point10.hpp"
#include "laz_pointwise_support.hpp"

#include <array>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace heightgrid::io::laz {
namespace {

enum class slot_kind : std::uint8_t {
  point10_v1, point10_v2, gpstime11_v1, gpstime11_v2, rgb12_v1, rgb12_v2, bytes_v1, bytes_v2,
  wavepacket13_v1
};

struct slot {
  slot_kind kind;
  std::size_t offset;  // within the record
  std::size_t index;   // into the decoder vector of its kind
};

}  // namespace

/// The item decoders of one record layout, in record order. A switch per item and point (well
/// predicted: the same sequence every point) instead of virtual calls, so that the compiler can
/// inline each item's decode into the loop.
struct pointwise_decoder::items {
  std::vector<slot> slots;
  std::vector<point10_v1> p10v1;
  std::vector<point10_v2> p10v2;
  std::vector<gpstime11_v1> gt1;
  std::vector<gpstime11_v2> gt2;
  std::vector<rgb12_v1> rgb1;
  std::vector<rgb12_v2> rgb2;
  std::vector<bytes_v1> b1;
  std::vector<bytes_v2> b2;
  std::vector<wavepacket13_v1> wp1;

  void init(std::uint8_t const* record)
  {
    for (auto const& s : slots) {
      std::uint8_t const* p = record + s.offset;
      switch (s.kind) {
        case slot_kind::point10_v1: p10v1[s.index].init(p); break;
        case slot_kind::point10_v2: p10v2[s.index].init(p); break;
        case slot_kind::gpstime11_v1: gt1[s.index].init(p); break;
        case slot_kind::gpstime11_v2: gt2[s.index].init(p); break;
        case slot_kind::rgb12_v1: rgb1[s.index].init(p); break;
        case slot_kind::rgb12_v2: rgb2[s.index].init(p); break;
        case slot_kind::bytes_v1: b1[s.index].init(p); break;
        case slot_kind::bytes_v2: b2[s.index].init(p); break;
        case slot_kind::wavepacket13_v1: wp1[s.index].init(p); break;
      }
    }
  }

  void decode(arithmetic_decoder& dec, std::uint8_t* record)
  {
    for (auto const& s : slots) {
      std::uint8_t* p = record + s.offset;
      switch (s.kind) {
        case slot_kind::point10_v1: p10v1[s.index].decode(dec, p); break;
        case slot_kind::point10_v2: p10v2[s.index].decode(dec, p); break;
        case slot_kind::gpstime11_v1: gt1[s.index].decode(dec, p); break;
        case slot_kind::gpstime11_v2: gt2[s.index].decode(dec, p); break;
        case slot_kind::rgb12_v1: rgb1[s.index].decode(dec, p); break;
        case slot_kind::rgb12_v2: rgb2[s.index].decode(dec, p); break;
        case slot_kind::bytes_v1: b1[s.index].decode(dec, p); break;
        case slot_kind::bytes_v2: b2[s.index].decode(dec, p); break;
        case slot_kind::wavepacket13_v1: wp1[s.index].decode(dec, p); break;
      }
    }
  }
};

pointwise_decoder::pointwise_decoder(laz_vlr_info const& vlr) : items_(std::make_unique<items>())
{
  items& it = *items_;
  std::size_t offset = 0;
  for (auto const& item : vlr.items) {
    auto add = [&](slot_kind kind, auto& decoders, auto&&... args) {
      it.slots.push_back({kind, offset, decoders.size()});
      decoders.emplace_back(std::forward<decltype(args)>(args)...);
    };
    std::uint16_t const v = item.version;
    switch (item.type) {
      case item_type::point10:
        if (v == 1) add(slot_kind::point10_v1, it.p10v1);
        else if (v == 2) add(slot_kind::point10_v2, it.p10v2);
        break;
      case item_type::gpstime11:
        if (v == 1) add(slot_kind::gpstime11_v1, it.gt1);
        else if (v == 2) add(slot_kind::gpstime11_v2, it.gt2);
        break;
      case item_type::rgb12:
        if (v == 1) add(slot_kind::rgb12_v1, it.rgb1);
        else if (v == 2) add(slot_kind::rgb12_v2, it.rgb2);
        break;
      case item_type::byte:
        if (v == 1) add(slot_kind::bytes_v1, it.b1, std::size_t{item.size});
        else if (v == 2) add(slot_kind::bytes_v2, it.b2, std::size_t{item.size});
        break;
      case item_type::wavepacket13:  // one coding under both labels (see laz_vlr.cpp)
        if (v == 1 || v == 2) add(slot_kind::wavepacket13_v1, it.wp1);
        break;
      default: break;
    }
    if (it.slots.empty() || it.slots.back().offset != offset) {
      throw decode_error("item " + item_type_name(item.type) + " v" + std::to_string(v) +
                         " is not a pointwise LAZ item (compressors 1 and 2)");
    }
    offset += item.size;
  }
  record_length_ = offset;
  if (record_length_ == 0) throw decode_error("LASzip VLR lists no items");
}

pointwise_decoder::~pointwise_decoder() = default;
pointwise_decoder::pointwise_decoder(pointwise_decoder&&) noexcept = default;
pointwise_decoder& pointwise_decoder::operator=(pointwise_decoder&&) noexcept = default;

void pointwise_decoder::start(std::uint8_t const* data, std::size_t size)
{
  data_ = data;
  size_ = size;
  first_pending_ = true;
}

void pointwise_decoder::decode(std::size_t points, std::uint8_t* records)
{
  if (points == 0) return;
  if (first_pending_) {
    // The first point of a chunk is stored raw; it seeds every item's predictions, and the
    // arithmetic-coded stream follows it.
    if (size_ < record_length_) {
      throw decode_error("the chunk is " + std::to_string(size_) +
                         " bytes, shorter than its first (raw) point of " +
                         std::to_string(record_length_) + " bytes");
    }
    std::memcpy(records, data_, record_length_);
    items_->init(records);
    dec_.init(data_ + record_length_, size_ - record_length_);
    first_pending_ = false;
    records += record_length_;
    --points;
  }
  items& it = *items_;
  for (std::size_t i = 0; i < points; ++i) {
    it.decode(dec_, records);
    records += record_length_;
  }
  if (dec_.overrun() > 0) {
    throw decode_error("arithmetic decoder ran " + std::to_string(dec_.overrun()) +
                       " bytes past the end of the chunk (truncated or corrupt data)");
  }
}

std::size_t pointwise_decoder::consumed() const
{
  if (first_pending_) return 0;
  return record_length_ + dec_.position();
}

std::size_t decode_pointwise_chunk(laz_vlr_info const& vlr, std::uint8_t const* data,
                                   std::size_t size, std::size_t points, std::uint8_t* records)
{
  pointwise_decoder decoder(vlr);
  decoder.start(data, size);
  decoder.decode(points, records);
  return decoder.consumed();
}

}  // namespace heightgrid::io::laz
