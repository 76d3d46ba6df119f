#include "laz_arith.hpp"

#include <algorithm>
#include <string>

namespace heightgrid::io::laz {

symbol_model::symbol_model(std::uint32_t symbols) : symbols_(symbols), last_symbol_(symbols - 1)
{
  // LASzip's models hold 2..2048 symbols; the callers are our own item decoders, so anything
  // else is a bug, not bad input.
  if (symbols < 2 || symbols > 2048) {
    throw std::invalid_argument("symbol_model: " + std::to_string(symbols) +
                                " symbols (must be 2..2048)");
  }
  if (symbols > 16) {
    // A table of 2^table_bits slots over the 15-bit probability range, at least one per symbol:
    // the search inside a slot is a chain of dependent loads on the decoder's critical path, so
    // it pays to keep it to a step or two (a quarter as many slots was 8 % slower per point).
    std::uint32_t table_bits = 5;
    while (symbols > (1u << table_bits)) { ++table_bits; }
    table_size_ = 1u << table_bits;
    table_shift_ = detail::symbol_length_shift - table_bits;
  }
  counts_offset_ = symbols + (table_size_ ? table_size_ + 2 : 0);
  storage_.assign(std::size_t{counts_offset_} + symbols, 0);
  reset();
}

void symbol_model::reset()
{
  // Every chunk starts every model it uses afresh, and a fresh model of n symbols is always the
  // same: counts of one and the distribution and lookup table they give. Rebuilding those was 5 %
  // of decoding 1000 LAZ tiles of 10^4 points (a chunk each; 150 models a channel), so each
  // thread builds them once per alphabet size and copies them.
  thread_local std::vector<std::vector<std::uint16_t>> fresh_by_symbols;
  if (fresh_by_symbols.size() <= symbols_) { fresh_by_symbols.resize(symbols_ + 1); }
  std::vector<std::uint16_t>& fresh = fresh_by_symbols[symbols_];
  if (fresh.empty()) {
    std::uint16_t* c = counts();
    for (std::uint32_t s = 0; s < symbols_; ++s) { c[s] = 1; }
    total_count_ = 0;
    update_cycle_ = symbols_;
    update();
    fresh = storage_;
  } else {
    std::copy(fresh.begin(), fresh.end(), storage_.begin());
  }
  total_count_ = symbols_;  // what update() made of counts of one (symbols_ < symbol_max_count)
  update_cycle_ = (symbols_ + 6) >> 1;
  until_update_ = update_cycle_;
}

void symbol_model::update()
{
  std::uint16_t* const c = counts();
  std::uint16_t* const dist = distribution();
  // The counts decoded since the last update sum to update_cycle_; halve them all when the total
  // would pass 2^15 so that the 15-bit distribution keeps every symbol a non-zero width.
  total_count_ += update_cycle_;
  if (total_count_ > detail::symbol_max_count) {
    total_count_ = 0;
    for (std::uint32_t s = 0; s < symbols_; ++s) {
      c[s] = static_cast<std::uint16_t>((c[s] + 1) >> 1);
      total_count_ += c[s];
    }
  }
  std::uint32_t const scale = 0x80000000u / total_count_;
  std::uint32_t sum = 0;
  if (table_size_ == 0) {
    for (std::uint32_t s = 0; s < symbols_; ++s) {
      dist[s] = static_cast<std::uint16_t>((scale * sum) >> (31 - detail::symbol_length_shift));
      sum += c[s];
    }
  } else {
    // table[t] = the symbol whose interval contains the start of slot t (so the search for a
    // value in slot t runs between table[t] and table[t + 1] + 1): for t >= 1, one less than
    // the number of symbols whose interval starts in a slot before t. Counted as a histogram of
    // start slots and summed up, which has no branch on the data.
    std::uint16_t* const table = this->table();
    std::fill(table, table + table_size_ + 2, std::uint16_t{0});
    for (std::uint32_t s = 0; s < symbols_; ++s) {
      dist[s] = static_cast<std::uint16_t>((scale * sum) >> (31 - detail::symbol_length_shift));
      sum += c[s];
      ++table[(dist[s] >> table_shift_) + 1];  // dist < 2^15: start slot < table_size_
    }
    std::uint32_t before = 0;
    for (std::uint32_t t = 1; t <= table_size_ + 1; ++t) {
      before += table[t];
      table[t] = static_cast<std::uint16_t>(before - 1);
    }
    table[0] = 0;
  }
  // Adapt quickly at first, then less and less often (up to every 8 * (symbols + 6) symbols).
  update_cycle_ = (5 * update_cycle_) >> 2;
  std::uint32_t const max_cycle = (symbols_ + 6) << 3;
  if (update_cycle_ > max_cycle) update_cycle_ = max_cycle;
  until_update_ = update_cycle_;
}

integer_decompressor::integer_decompressor(std::uint32_t bits, std::uint32_t contexts,
                                           std::uint32_t bits_high, std::uint32_t range)
  : contexts_(contexts == 0 ? 1 : contexts), bits_high_(bits_high)
{
  if (range != 0) {
    // Correctors are folded into [-range/2, range/2); k needs ceil(log2(range)) bits.
    corr_bits_ = 0;
    for (std::uint32_t r = range; r != 0; r >>= 1) { ++corr_bits_; }
    if (range == (1u << (corr_bits_ - 1))) --corr_bits_;
    corr_range_ = range;
  } else if (bits != 0 && bits < 32) {
    corr_bits_ = bits;
    corr_range_ = 1u << bits;
  } else {
    // 32-bit values: correctors wrap around in 32-bit arithmetic, no folding.
    corr_bits_ = 32;
    corr_range_ = 0;
  }
  corr_min_ = corr_range_ == 0 ? INT32_MIN : -static_cast<std::int32_t>(corr_range_ / 2);
}

void integer_decompressor::init()
{
  if (k_models_.empty()) {
    k_models_.assign(contexts_, symbol_model(corr_bits_ + 1));
    corrector_models_.reserve(corr_bits_ + 1);
    // Index 0 is never used (k = 0 goes through zero_model_); keep a tiny placeholder so that
    // corrector_models_[k] is the model for k.
    corrector_models_.emplace_back(2);
    for (std::uint32_t k = 1; k <= corr_bits_; ++k) {
      std::uint32_t const model_bits = k <= bits_high_ ? k : bits_high_;
      corrector_models_.emplace_back(1u << model_bits);
    }
  } else {
    for (auto& m : k_models_) { m.reset(); }
    for (auto& m : corrector_models_) { m.reset(); }
  }
  zero_model_.reset();
  k_ = 0;
}

}  // namespace heightgrid::io::laz
