#include "heightgrid/core/error.hpp"

#include <algorithm>
#include <string_view>

namespace heightgrid {

int exit_code(error_kind kind) noexcept
{
  switch (kind) {
    case error_kind::usage: return 2;
    case error_kind::input: return 3;
    case error_kind::output: return 4;
    case error_kind::resource: return 5;
    case error_kind::device: return 6;
    case error_kind::internal: return 70;
  }
  return 1;
}

namespace detail {

std::string source_location(char const* file, int line)
{
  std::string_view f(file);
  auto first = std::string_view::npos;  // the leftmost of the project's top folders in the path
  for (std::string_view top : {"/kernels/", "/core/", "/io/", "/app/", "/bench/", "/tests/"}) {
    first = std::min(first, f.find(top));
  }
  if (first != std::string_view::npos) { f.remove_prefix(first + 1); }
  return std::string(f) + ":" + std::to_string(line);
}

void throw_expects(error_kind kind, std::string const& message) { throw error(kind, message); }

}  // namespace detail

}  // namespace heightgrid
