// detail::las_file: a LAS/LAZ file's bytes read at any offset by many threads — pread on a local
// file, GDAL's VSI layer (a pool of handles) on a remote one (/vsicurl/, /vsis3/ ...).

#include "heightgrid/core/error.hpp"
#include "heightgrid/io/gdal_env.hpp"
#include "heightgrid/io/remote.hpp"
#include "gdal/gdal_internal.hpp"
#include "las/las_internal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <cpl_vsi.h>

namespace heightgrid::io::detail {
namespace {

std::string system_message(int err) { return std::error_code(err, std::generic_category()).message(); }

}  // namespace

/// Free VSI handles of a remote file, reused by later reads (a handle is used by one thread at a time).
struct las_file::vsi_handles {
  std::mutex mutex;
  std::vector<VSILFILE*> free;
  ~vsi_handles()
  {
    for (auto* h : free) { VSIFCloseL(h); }
  }
};

las_file::las_file(std::string path) : path_(std::move(path))
{
  if (auto const remote = remote_path(path_)) {
    vsi_path_ = *remote;
    VSIStatBufL st{};
    CPLErrorReset();
    if (VSIStatExL(vsi_path_.c_str(), &st, VSI_STAT_EXISTS_FLAG | VSI_STAT_NATURE_FLAG | VSI_STAT_SIZE_FLAG) != 0) {
      throw error(error_kind::input, path_ + ": cannot open through GDAL (" + vsi_path_ +
                                       "): not found or not reachable (" + gdal_last_error() + ")");
    }
    if (VSI_ISDIR(st.st_mode)) { throw error(error_kind::input, path_ + ": is a directory, not a file"); }
    size_ = static_cast<std::uint64_t>(st.st_size);
    vsi_ = std::make_unique<vsi_handles>();
    VSILFILE* const h = VSIFOpenL(vsi_path_.c_str(), "rb");
    if (h == nullptr) {
      throw error(error_kind::input, path_ + ": cannot open through GDAL (" + vsi_path_ + "): " + gdal_last_error());
    }
    vsi_->free.push_back(h);
    return;
  }
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) { throw error(error_kind::input, path_ + ": cannot open: " + system_message(errno)); }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int const err = errno;
    ::close(fd_);
    throw error(error_kind::input, path_ + ": cannot stat: " + system_message(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw error(error_kind::input, path_ + ": not a regular file");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
  // Only a hint for read-ahead; failure changes nothing but speed.
  (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
}

las_file::~las_file()
{
  if (fd_ >= 0) { ::close(fd_); }
}

las_file::las_file(las_file&& other) noexcept
  : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_),
    vsi_path_(std::move(other.vsi_path_)), vsi_(std::move(other.vsi_))
{
}

std::size_t las_file::read_remote(std::uint64_t offset, std::size_t count, std::uint8_t* out) const
{
  VSILFILE* h = nullptr;
  {
    std::lock_guard<std::mutex> lock(vsi_->mutex);
    if (!vsi_->free.empty()) {
      h = vsi_->free.back();
      vsi_->free.pop_back();
    }
  }
  if (h == nullptr) { h = VSIFOpenL(vsi_path_.c_str(), "rb"); }
  if (h == nullptr) {
    throw error(error_kind::input, path_ + ": byte " + std::to_string(offset) +
                                     ": cannot open through GDAL again: " + gdal_last_error());
  }
  std::size_t got = 0;
  CPLErrorReset();  // a reason GDAL gives below is this read's, not an earlier one's
  bool const sought = VSIFSeekL(h, static_cast<vsi_l_offset>(offset), SEEK_SET) == 0;
  if (sought && count > 0) { got = VSIFReadL(out, 1, count, h); }
  bool const failed = !sought || (got < count && offset + got < size_);
  std::string const why = failed ? remote_read_failure() : std::string();
  {
    std::lock_guard<std::mutex> lock(vsi_->mutex);
    vsi_->free.push_back(h);
  }
  if (failed) {
    throw error(error_kind::input, path_ + ": byte " + std::to_string(offset + got) + ": read failed: " + why);
  }
  note_remote_bytes(got);
  return got;
}

std::size_t las_file::read_upto(std::uint64_t offset, std::size_t count, std::uint8_t* out) const
{
  if (vsi_ != nullptr) { return read_remote(offset, count, out); }
  std::size_t done = 0;
  while (done < count) {
    ssize_t const got = ::pread(fd_, out + done, count - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) { continue; }
      throw error(error_kind::input, path_ + ": byte " + std::to_string(offset + done) +
                                       ": read failed: " + system_message(errno));
    }
    if (got == 0) { break; }
    done += static_cast<std::size_t>(got);
  }
  return done;
}

void las_file::read_exact(std::uint64_t offset, std::size_t count, std::uint8_t* out) const
{
  std::size_t const got = read_upto(offset, count, out);
  if (got < count) {
    throw error(error_kind::input, path_ + ": byte " + std::to_string(offset + got) +
                                     ": the file ends here (was it truncated while being read?)");
  }
}

}  // namespace heightgrid::io::detail
