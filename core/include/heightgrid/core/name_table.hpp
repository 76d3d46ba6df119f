#pragma once
// One table per enum of its CLI names (and whatever else belongs to each value): name, parse and
// list all read the same rows, so a value added to the table is known everywhere at once, and a
// value left out of it is known nowhere (tests iterate over the table, not over the enum).
//
// A row is name_row<Enum>, or any struct with `value` (the enumerator) and `name` (its CLI
// spelling) when a row carries more (reduce_mode_row):
//   inline constexpr std::array<name_row<color>, 2> colors{{{color::red, "red"}, {color::blue, "blue"}}};
//   name_in(colors, color::blue) == "blue"; parse_in(colors, "red") == color::red;
//   names_in(colors, ", ") == "red, blue".

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace heightgrid {

/// A row that carries a value and its name alone.
template <typename Enum>
struct name_row {
  Enum value;
  std::string_view name;
};

/// The row of `value`, or nullptr where the table lacks it.
template <typename Table, typename Enum>
[[nodiscard]] constexpr auto const* row_in(Table const& table, Enum value) noexcept
{
  for (auto const& row : table) {
    if (row.value == value) { return &row; }
  }
  return static_cast<typename Table::value_type const*>(nullptr);
}

/// The name of `value`; "?" where the table lacks it.
template <typename Table, typename Enum>
[[nodiscard]] constexpr std::string_view name_in(Table const& table, Enum value) noexcept
{
  auto const* row = row_in(table, value);
  return row == nullptr ? std::string_view("?") : row->name;
}

/// The value named `name` exactly, or nullopt.
template <typename Table>
[[nodiscard]] constexpr auto parse_in(Table const& table, std::string_view name) noexcept
  -> std::optional<decltype(table.begin()->value)>
{
  for (auto const& row : table) {
    if (row.name == name) { return row.value; }
  }
  return std::nullopt;
}

/// Every value, in table order.
template <typename Table>
[[nodiscard]] auto values_in(Table const& table)
{
  std::vector<decltype(table.begin()->value)> out;
  out.reserve(table.size());
  for (auto const& row : table) { out.push_back(row.value); }
  return out;
}

/// Every name, in table order, joined by `separator`: for help texts and error messages.
template <typename Table>
[[nodiscard]] std::string names_in(Table const& table, std::string_view separator)
{
  std::string out;
  for (auto const& row : table) {
    if (!out.empty()) { out += separator; }
    out += row.name;
  }
  return out;
}

}  // namespace heightgrid
