#include "heightgrid/io/gdal_env.hpp"

#include "gdal/gdal_internal.hpp"

#include <cpl_conv.h>
#include <cpl_string.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>

namespace heightgrid::io {
namespace {

// The sink is swapped as a whole under the mutex and called outside it, so a sink that itself
// triggers a GDAL message cannot deadlock.
std::mutex sink_mutex;
std::shared_ptr<gdal_message_sink const> current_sink;

std::shared_ptr<gdal_message_sink const> load_sink()
{
  std::lock_guard<std::mutex> lock(sink_mutex);
  return current_sink;
}

gdal_message_level level_of(CPLErr level) noexcept
{
  switch (level) {
    case CE_None:
    case CE_Debug: return gdal_message_level::debug;
    case CE_Warning: return gdal_message_level::warning;
    case CE_Failure:
    case CE_Fatal: return gdal_message_level::error;
  }
  return gdal_message_level::error;
}

void CPL_STDCALL global_handler(CPLErr level, CPLErrorNum number, char const* message)
{
  detail::route_gdal_message(level, number, message);
}

}  // namespace

namespace detail {

void ensure_gdal_registered()
{
  static std::once_flag once;
  std::call_once(once, [] { GDALAllRegister(); });
}

void route_gdal_message(CPLErr level, CPLErrorNum number, char const* message)
{
  auto const sink = load_sink();
  if (!sink) {
    CPLDefaultErrorHandler(level, number, message);
    return;
  }
  // A throwing sink must not unwind through GDAL's C frames.
  try {
    (*sink)(level_of(level), message != nullptr ? std::string(message) : std::string());
  } catch (...) {
  }
}

std::string wkt_of(OGRSpatialReference const* srs)
{
  if (srs == nullptr || srs->IsEmpty()) { return {}; }
  for (char const* format : {"FORMAT=WKT2_2019", "FORMAT=WKT1"}) {
    char const* const options[] = {format, "MULTILINE=NO", nullptr};
    char* wkt = nullptr;
    OGRErr const err = srs->exportToWkt(&wkt, options);
    std::string out = (err == OGRERR_NONE && wkt != nullptr) ? std::string(wkt) : std::string();
    CPLFree(wkt);
    if (!out.empty()) { return out; }
  }
  return {};
}

std::string vertical_units_of(OGRSpatialReference const* srs)
{
  if (srs == nullptr || !(srs->IsVertical() || srs->IsCompound())) { return {}; }
  char const* name = nullptr;
  srs->GetTargetLinearUnits("VERT_CS", &name);
  return name != nullptr ? std::string(name) : std::string();
}

}  // namespace detail

void init_gdal(gdal_message_sink sink)
{
  detail::ensure_gdal_registered();
  {
    std::lock_guard<std::mutex> lock(sink_mutex);
    current_sink = sink ? std::make_shared<gdal_message_sink const>(std::move(sink)) : nullptr;
  }
  CPLSetErrorHandler(global_handler);
}

std::string gdal_last_error()
{
  char const* message = CPLGetLastErrorMsg();
  return (message != nullptr && *message != '\0') ? std::string(message)
                                                   : std::string("no details from GDAL");
}

gdal_error_scope::gdal_error_scope()
{
  CPLErrorReset();
  CPLPushErrorHandlerEx(&gdal_error_scope::handler, this);
}

gdal_error_scope::~gdal_error_scope() { CPLPopErrorHandler(); }

std::string gdal_error_scope::message() const
{
  if (failures_.empty()) { return gdal_last_error(); }
  std::string out = failures_.front();
  for (std::size_t i = 1; i < failures_.size(); ++i) {
    // GDAL often reports one cause several times as it unwinds, or once per block it fails to
    // write (libtiff's "_tiffWriteProc: File too large; TIFFAppendToStrip: ..." pair for each):
    // say each message once, where it first came.
    auto const earlier = failures_.begin() + static_cast<std::ptrdiff_t>(i);
    if (std::find(failures_.begin(), earlier, failures_[i]) == earlier) { out += "; " + failures_[i]; }
  }
  return out;
}

void CPL_STDCALL gdal_error_scope::handler(CPLErr level, CPLErrorNum number, char const* message)
{
  if (level == CE_Failure || level == CE_Fatal) {
    auto* self = static_cast<gdal_error_scope*>(CPLGetErrorHandlerUserData());
    try {
      self->failures_.emplace_back(message != nullptr ? message : "");
    } catch (...) {
    }
    return;
  }
  detail::route_gdal_message(level, number, message);
}

}  // namespace heightgrid::io
