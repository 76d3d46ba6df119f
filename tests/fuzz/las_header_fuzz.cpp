// libFuzzer target for the LAS header/VLR/EVLR parser and the GeoTIFF-key TIFF builder.
// Any input must either parse into a header whose point data fits the input, or throw
// heightgrid::error(error_kind::input); anything else (a crash, a sanitizer report, another
// exception, a leak, a hang) is a finding. Built and run by tests/fuzz/run_fuzz.sh.

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/las_crs.hpp"
#include "heightgrid/io/las_reader.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size)
{
  try {
    auto const h = heightgrid::io::parse_las_header(data, size, "fuzz.las");
    // What the point reader relies on: the records lie inside the file.
    if (!h.compressed && (h.point_count > size / h.record_length ||
                          h.offset_to_point_data + h.point_count * h.record_length > size)) {
      std::abort();
    }
    if (!h.geotiff_keys.empty()) { (void)heightgrid::io::geotiff_keys_as_tiff(h.geotiff_keys); }
  } catch (heightgrid::error const& e) {
    if (e.kind() != heightgrid::error_kind::input) { std::abort(); }
  }
  return 0;
}
