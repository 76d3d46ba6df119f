#include "heightgrid/core/error.hpp"

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

}  // namespace heightgrid
