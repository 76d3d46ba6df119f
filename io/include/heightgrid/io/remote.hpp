#pragma once
// Inputs that live elsewhere: URLs and GDAL virtual file systems. heightgrid reads them through
// GDAL's VSI layer (/vsicurl/ range requests with its block cache, /vsis3/, /vsigs/, /vsiaz/ with
// their credentials and settings, which --config passes), fetching only the byte ranges a reader
// asks for: a LAS/LAZ header, a chunk table or COPC hierarchy, then the chunks a job needs.

#include <cstdint>
#include <optional>
#include <string>

namespace heightgrid::io {

/// The GDAL path of a remote input: `https://...` and `http://...` -> `/vsicurl/...`, `s3://b/k` ->
/// `/vsis3/b/k`, `gs://` -> `/vsigs/`, `az://` -> `/vsiaz/`; a path already starting with `/vsi`
/// unchanged. Nothing for a local path.
[[nodiscard]] std::optional<std::string> remote_path(std::string const& path);

/// Whether `path` names a remote input (remote_path gives one).
[[nodiscard]] inline bool is_remote(std::string const& path) { return remote_path(path).has_value(); }

/// The extension of a URL's or path's last component, lower case, without a query string
/// ("https://h/a/T.LAZ?sig=1" -> ".laz"); "" when none.
[[nodiscard]] std::string remote_extension(std::string const& path);

/// Why a read through GDAL's VSI layer came back short: GDAL's message for the last failure on this
/// thread (call CPLErrorReset() before the read), else that the transfer stopped short, for which
/// GDAL 3.6 gives no reason (it logs curl's, a reset connection or a timeout, at debug level only).
[[nodiscard]] std::string remote_read_failure();

/// Bytes this process has asked of GDAL's VSI layer for remote inputs so far (GDAL fetches whole
/// blocks of its cache, 16 KiB by default, so the network carries somewhat more).
[[nodiscard]] std::uint64_t remote_bytes_requested() noexcept;

}  // namespace heightgrid::io
