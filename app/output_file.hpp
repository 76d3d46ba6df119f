#pragma once
// Files the app writes besides GeoTIFFs (LAS from `synth`, JSON and PNG from `compare`): checked
// before any work, written beside the target under a temporary name and renamed into place, so a
// failed run leaves nothing behind and never a partial file.

#include "heightgrid/core/temp_registry.hpp"

#include <filesystem>
#include <string>

namespace heightgrid::app {

/// Throws error_kind::output when `path` is a directory, exists without `overwrite` ("out.las:
/// output exists; use --overwrite to replace it"), or its directory is missing or not writable.
/// `what` names the option in messages (e.g. "--json").
void check_output_file(std::string const& path, bool overwrite, std::string const& what);

/// temporary_file (core/temp_registry.hpp): the hidden file a target is written under.
using heightgrid::temporary_file;

/// Writes `text` to `path` atomically (temporary + rename). Throws error_kind::output.
void write_text_file(std::string const& path, std::string const& text);

}  // namespace heightgrid::app
