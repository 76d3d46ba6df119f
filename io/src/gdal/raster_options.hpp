#pragma once
// The writer's options, checked before any file exists: the output format, the creation options
// (our defaults merged with --co, each of the user's tried on a scratch dataset), and the output
// path (an input is never replaced). Internal to heightgrid_io; the public half is declared in
// heightgrid/io/geotiff_writer.hpp.

#include "heightgrid/io/geotiff_writer.hpp"

#include <cpl_string.h>
#include <gdal_priv.h>

#include <string>
#include <string_view>
#include <vector>

namespace heightgrid::io::detail {

enum class output_format { gtiff, cog };

[[nodiscard]] bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept;

/// --of: GTiff or COG (any case); throws error_kind::usage otherwise.
[[nodiscard]] output_format parse_format(std::string const& format);

/// Every --co is KEY=VALUE; throws error_kind::usage naming the first that is not.
void check_creation_options(std::vector<std::string> const& options);

/// Defaults first, then the user's --co (a key in any case replaces the default).
/// The DEFLATE level (ZLEVEL, COG: LEVEL) is set to 1 last, only when the codec is DEFLATE and the
/// user named no level; no predictor is set unless the user asks for one.
[[nodiscard]] CPLStringList merged_creation_options(output_format format,
                                                   std::vector<std::string> const& user);

/// The user's --co, each tried before any file exists: checked against the driver's option list,
/// then used for a 1 x 1 dataset in memory (/vsimem), so that a value the driver refuses only
/// when creating (BLOCKXSIZE=7) is a usage error naming the option, not an output failure naming
/// the hidden temporary.
void probe_creation_options(output_format format, std::vector<std::string> const& user);

/// Creation options of the GTiff that a COG is converted from: tiles of the COG's BLOCKSIZE, so
/// that the COG driver reads whole tiles, and a fast lossless codec (ZSTD level 1 where `gtiff`
/// has it, else DEFLATE level 1), as the file is read once and deleted.
[[nodiscard]] CPLStringList cog_source_options(CPLStringList const& cog, GDALDriver& gtiff);

}  // namespace heightgrid::io::detail
