#pragma once

// The CPU readers' face of the LAZ entropy coder (heightgrid/core/laz/coder.hpp, the code the GPU
// decoders run too): models that own their storage, the range decoder with the position the
// pointwise reader finds chunk ends by, and integer decompressors of run-time size. What decodes
// here decodes the same on the device because it is the same code.
//
// Safety: the decoder never reads outside [data, data + size). Bytes requested past the end read
// as zero and are counted in overrun(); chunk decoders turn a non-zero overrun into an error.
// Every table index derived from decoded data is clamped, so corrupt input gives garbage values
// or an error, never an out-of-bounds access or an endless loop.

#include "heightgrid/core/laz/coder.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

namespace heightgrid::io::laz {

namespace codec = heightgrid::detail::laz;

/// Corrupt or unsupported compressed data. Callers add the file name and chunk position.
struct decode_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Adaptive model of an alphabet of 2..2048 symbols, its tables in storage of its own.
class symbol_model {
 public:
  explicit symbol_model(std::uint32_t symbols);
  symbol_model(symbol_model const& other) : storage_(other.storage_), m_(other.m_) { m_.storage = storage_.data(); }
  symbol_model& operator=(symbol_model const& other)
  {
    storage_ = other.storage_;
    m_ = other.m_;
    m_.storage = storage_.data();
    return *this;
  }
  // A vector's move keeps its buffer, and m_.storage with it.
  symbol_model(symbol_model&&) noexcept = default;
  symbol_model& operator=(symbol_model&&) noexcept = default;
  ~symbol_model() = default;

  /// Counts of one (on the CPU a copy of the fresh model of this size that the thread keeps).
  void reset() { codec::reset(m_); }
  std::uint32_t symbols() const { return m_.symbols; }

 private:
  friend class arithmetic_decoder;
  std::vector<std::uint16_t> storage_;
  codec::symbol_model m_{};
};

/// Decodes from [data, data + size). Reading past the end yields zero bytes and counts them in
/// overrun(); it never reads outside the buffer.
class arithmetic_decoder {
 public:
  /// Counts loaded and stored, small models bisected: on the CPU the other choices (a reduction, a
  /// count over the whole distribution) are the same loop or slower.
  using coder = codec::basic_range_decoder<false, false>;

  /// Starts decoding at data; reads the first 4 bytes (the initial code value).
  void init(std::uint8_t const* data, std::size_t size)
  {
    begin_ = data;
    d_.init(data, size);
  }

  std::uint32_t decode_symbol(symbol_model& m) { return d_.decode_symbol(m.m_); }

  /// 1..32 raw bits.
  std::uint32_t read_bits(std::uint32_t bits) { return d_.read_bits(bits); }
  std::uint32_t read_int() { return d_.read_int(); }
  std::uint64_t read_int64() { return d_.read_int64(); }

  /// Bytes consumed so far. Encoders pad their output so that after the last symbol this is
  /// exactly the length of the compressed stream (used to find the next chunk without a table).
  std::size_t position() const { return static_cast<std::size_t>(d_.next - begin_); }
  /// Bytes requested past the end of the buffer (read as zeros).
  std::size_t overrun() const { return d_.overrun; }

  /// The coder itself, for the codec's functions (core/laz) and bit models.
  coder& state() { return d_; }

 private:
  std::uint8_t const* begin_ = nullptr;
  coder d_{nullptr, nullptr, 0, 0xFFFFFFFFu, 0};
};

/// An integer decompressor of `bits` corrector bits (32: wrapped in 32-bit arithmetic) and
/// `contexts` k models (codec::decompress_integer), its models in one arena of its own.
class integer_decompressor {
 public:
  explicit integer_decompressor(std::uint32_t bits = 16, std::uint32_t contexts = 1);
  integer_decompressor(integer_decompressor const&) = delete;
  integer_decompressor& operator=(integer_decompressor const&) = delete;
  // The models point into arena_, whose buffer a move keeps.
  integer_decompressor(integer_decompressor&&) noexcept = default;
  integer_decompressor& operator=(integer_decompressor&&) noexcept = default;
  ~integer_decompressor() = default;

  /// Starts a chunk: every model fresh (a copy of the fresh arena and models made with it; the
  /// CPU resets them all at once, which costs less than a stamp test at every use).
  void init();

  std::int32_t decompress(arithmetic_decoder& dec, std::int32_t pred, std::uint32_t context = 0)
  {
    // Out-of-range contexts come only from corrupt data in a caller; keep them in range.
    if (context >= k_models_.size()) { context = static_cast<std::uint32_t>(k_models_.size()) - 1; }
    return codec::decompress_integer<false>(dec.state(), pred, k_models_[context], zero_, corrector_.data(), range_, 0,
                                            k_);
  }

  /// k of the last decompress.
  std::uint32_t k() const { return k_; }

 private:
  std::vector<std::uint16_t> arena_;
  std::vector<std::uint16_t> fresh_arena_;
  std::vector<codec::symbol_model> k_models_;   // one per context, bits + 1 symbols
  std::vector<codec::symbol_model> corrector_;  // index k = 1..; 0 unused
  std::vector<codec::symbol_model> fresh_models_;  // k_models_ then corrector_, fresh
  codec::bit_model zero_{};                     // k = 0
  std::uint32_t range_ = 0;
  std::uint32_t k_ = 0;
};

/// The models of one item (a codec item's models struct: point10_v2_models, ...) in an arena of
/// their own, reset lazily per chunk: next_chunk() gives the chunk's stamp (coder.hpp's use()).
template <class Models>
class item_models {
 public:
  // A decoder is made per file part, and point10's byte-keyed models alone are 1.2 MB: the arena
  // comes from the thread's last decoders (pool()) or new and uninitialised, so its pages are
  // touched once, and only those of the models in use (a model's words are written when it is
  // first reset; docs/benchmarks.md, "One LAZ codec for the CPU and the GPU").
  item_models() : arena_(take()) { lay_out(); }
  item_models(item_models const&) = delete;
  item_models& operator=(item_models const&) = delete;
  // The models point into arena_, which a move keeps.
  item_models(item_models&&) noexcept = default;
  item_models& operator=(item_models&&) noexcept = default;
  ~item_models()
  {
    auto* const arenas = pool();
    if (arena_ != nullptr && arenas != nullptr && arenas->size() < pool_limit) { arenas->push_back(std::move(arena_)); }
  }

  /// Starts a chunk (or a scanner channel in it): every model is fresh at its first use under the
  /// new stamp().
  void next_chunk()
  {
    if (++stamp_ == 0) {  // 0 marks a model never used: after 2^32 - 1 chunks, all unused again
      lay_out();
      stamp_ = 1;
    }
  }
  [[nodiscard]] std::uint32_t stamp() const { return stamp_; }
  Models& get() { return models_; }

 private:
  static constexpr std::size_t pool_limit = 4;  ///< arenas a thread keeps (a part's decoders)
  /// The thread's arenas; nullptr once the thread's exit has destroyed them (a decoder kept in a
  /// thread_local made before the pool is destroyed after it, and must not put its arena back).
  static std::vector<std::unique_ptr<std::uint16_t[]>>* pool()
  {
    thread_local bool gone = false;  // trivially destructible: still readable after the pool is gone
    if (gone) { return nullptr; }
    struct arenas {
      std::vector<std::unique_ptr<std::uint16_t[]>> held;
      bool* gone;
      ~arenas() { *gone = true; }
    };
    thread_local arenas pool{{}, &gone};
    return &pool.held;
  }
  static std::unique_ptr<std::uint16_t[]> take()
  {
    auto* const arenas = pool();
    if (arenas == nullptr || arenas->empty()) { return std::unique_ptr<std::uint16_t[]>(new std::uint16_t[words()]); }
    std::unique_ptr<std::uint16_t[]> arena = std::move(arenas->back());
    arenas->pop_back();
    return arena;
  }
  static std::size_t words()
  {
    std::size_t words = 0;
    Models::lay_out(nullptr, nullptr, words);
    return words;
  }
  void lay_out()
  {
    std::size_t used = 0;
    Models::lay_out(&models_, arena_.get(), used);
  }
  std::unique_ptr<std::uint16_t[]> arena_;
  Models models_{};
  std::uint32_t stamp_ = 0;
};

}  // namespace heightgrid::io::laz
