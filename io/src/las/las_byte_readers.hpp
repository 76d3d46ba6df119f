#pragma once
// The byte readers a LAS header is parsed from (las_header.cpp): bytes in memory, or a file's
// (detail::las_file, local or remote).

#include "heightgrid/io/las_reader.hpp"
#include "las/las_internal.hpp"

#include <cstdint>
#include <cstring>

namespace heightgrid::io::detail {

/// `size` bytes at `data`, which outlive the reader.
class memory_bytes final : public las_byte_reader {
 public:
  memory_bytes(std::uint8_t const* data, std::size_t size) : data_(data), size_(size) {}
  [[nodiscard]] std::uint64_t size() const override { return size_; }
  void read(std::uint64_t offset, std::size_t count, std::uint8_t* out) const override
  {
    if (count > 0) { std::memcpy(out, data_ + offset, count); }
  }

 private:
  std::uint8_t const* data_;
  std::size_t size_;
};

/// A file's bytes through its handle, which outlives the reader.
class file_bytes final : public las_byte_reader {
 public:
  explicit file_bytes(las_file const& file) : file_(file) {}
  [[nodiscard]] std::uint64_t size() const override { return file_.size(); }
  void read(std::uint64_t offset, std::size_t count, std::uint8_t* out) const override
  {
    file_.read_exact(offset, count, out);
  }

 private:
  las_file const& file_;
};

}  // namespace heightgrid::io::detail
