#include "heightgrid/io/remote.hpp"

#include "heightgrid/io/gdal_env.hpp"
#include "gdal/gdal_internal.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <utility>

namespace heightgrid::io {
namespace {

bool starts_with(std::string const& s, char const* prefix)
{
  std::string const p(prefix);
  return s.size() >= p.size() && std::equal(p.begin(), p.end(), s.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         });
}

}  // namespace

std::optional<std::string> remote_path(std::string const& path)
{
  if (starts_with(path, "/vsi")) { return path; }
  if (starts_with(path, "http://") || starts_with(path, "https://")) { return "/vsicurl/" + path; }
  static std::pair<char const*, char const*> const schemes[] = {
    {"s3://", "/vsis3/"}, {"gs://", "/vsigs/"}, {"az://", "/vsiaz/"}};
  for (auto const& [scheme, vsi] : schemes) {
    if (starts_with(path, scheme)) { return std::string(vsi) + path.substr(std::string(scheme).size()); }
  }
  return std::nullopt;
}

std::string remote_extension(std::string const& path)
{
  std::string p = path.substr(0, path.find_first_of("?#"));
  auto const slash = p.find_last_of('/');
  std::string const name = slash == std::string::npos ? p : p.substr(slash + 1);
  auto const dot = name.find_last_of('.');
  if (dot == std::string::npos || dot == 0) { return {}; }
  std::string ext = name.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

namespace {
std::atomic<std::uint64_t> remote_bytes{0};  ///< remote_bytes_requested()
}  // namespace

void detail::note_remote_bytes(std::uint64_t bytes) noexcept { remote_bytes += bytes; }

std::uint64_t remote_bytes_requested() noexcept { return remote_bytes.load(); }

std::string remote_read_failure()
{
  if (CPLGetLastErrorType() >= CE_Failure) { return gdal_last_error(); }
  return "the transfer stopped short (the connection was closed, reset or timed out)";
}

}  // namespace heightgrid::io
