#include "laz_arith.hpp"

#include <algorithm>
#include <string>

namespace heightgrid::io::laz {

symbol_model::symbol_model(std::uint32_t symbols)
{
  // LASzip's models hold 2..2048 symbols; the callers are our own item decoders, so anything
  // else is a bug, not bad input.
  if (symbols < 2 || symbols > 2048) {
    throw std::invalid_argument("symbol_model: " + std::to_string(symbols) + " symbols (must be 2..2048)");
  }
  storage_.assign(codec::storage_u16(symbols), 0);
  std::size_t used = 0;
  codec::place(&m_, symbols, storage_.data(), used);
  reset();
}

integer_decompressor::integer_decompressor(std::uint32_t bits, std::uint32_t contexts)
{
  // Our own item decoders choose these; anything else is a bug, not bad input.
  if (bits == 0 || bits > 32 || contexts == 0) {
    throw std::invalid_argument("integer_decompressor: " + std::to_string(bits) + " bits, " +
                                std::to_string(contexts) + " contexts");
  }
  range_ = bits < 32 ? 1u << bits : 0;
  std::uint32_t const correctors = codec::correctors_of(bits);
  auto const corrector_symbols = [](std::uint32_t k) {
    return 1u << std::min(k, codec::integer_bits_high);
  };
  std::size_t words = 0;
  for (std::uint32_t i = 0; i < contexts; ++i) { codec::place(nullptr, bits + 1, nullptr, words); }
  for (std::uint32_t k = 1; k < correctors; ++k) { codec::place(nullptr, corrector_symbols(k), nullptr, words); }
  arena_.assign(words, 0);
  k_models_.resize(contexts);
  corrector_.resize(correctors);
  std::size_t used = 0;
  for (auto& m : k_models_) { codec::place(&m, bits + 1, arena_.data(), used); }
  for (std::uint32_t k = 1; k < correctors; ++k) { codec::place(&corrector_[k], corrector_symbols(k), arena_.data(), used); }
  corrector_[0] = codec::symbol_model{};  // never used: k = 0 goes through the bit model
  for (auto& m : k_models_) { codec::reset(m); }
  for (std::uint32_t k = 1; k < correctors; ++k) { codec::reset(corrector_[k]); }
  fresh_arena_ = arena_;
  fresh_models_ = k_models_;
  fresh_models_.insert(fresh_models_.end(), corrector_.begin(), corrector_.end());
  codec::reset(zero_);
}

void integer_decompressor::init()
{
  // The copies' storage pointers point into arena_, which the fresh words overwrite.
  std::copy(fresh_arena_.begin(), fresh_arena_.end(), arena_.begin());
  std::copy(fresh_models_.begin(), fresh_models_.begin() + static_cast<std::ptrdiff_t>(k_models_.size()), k_models_.begin());
  std::copy(fresh_models_.begin() + static_cast<std::ptrdiff_t>(k_models_.size()), fresh_models_.end(), corrector_.begin());
  codec::reset(zero_);
  k_ = 0;
}

}  // namespace heightgrid::io::laz
