#pragma once
// The fuzzers of whole files: the readers take a path, so each input is written to one temporary
// file per process, rewritten for every input and removed at exit.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace heightgrid::fuzz {

class fuzz_file {
 public:
  explicit fuzz_file(char const* suffix)
  {
    char const* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/heightgrid-fuzz-" +
            std::to_string(::getpid()) + suffix;
  }
  fuzz_file(fuzz_file const&) = delete;
  fuzz_file& operator=(fuzz_file const&) = delete;
  ~fuzz_file() { std::remove(path_.c_str()); }

  /// Replaces the file's content with [data, data + size); aborts when it cannot (not a finding
  /// of the code under test, but nothing after it would mean anything).
  std::string const& write(std::uint8_t const* data, std::size_t size)
  {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
      std::perror(path_.c_str());
      std::abort();
    }
    return path_;
  }

 private:
  std::string path_;
};

}  // namespace heightgrid::fuzz
