// Outputs that must not be written: anything but a regular file or a new path, the input itself,
// a missing directory, an existing file without --overwrite.

#include "hostile_cases.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

std::string small_xyz(fs::path const& dir)
{
  auto const path = dir / "in.xyz";
  std::ofstream(path) << "0.5 0.5 10\n3.5 2.5 12\n";
  return path.string();
}

}  // namespace

std::vector<hostile_case> output_cases()
{
  struct target {
    std::string name;
    std::function<void(fs::path const&)> make;  ///< puts something at dir/out.tif
    std::string says;
    std::string output{"{out}"};
  };
  std::vector<target> const targets{
    {"directory", [](fs::path const& d) { fs::create_directory(d / "out.tif"); }, "directory"},
    {"dangling_symlink", [](fs::path const& d) { fs::create_symlink(d / "nowhere" / "x.tif", d / "out.tif"); },
     "dangling symbolic link"},
    {"symlink_to_dev_null", [](fs::path const& d) { fs::create_symlink("/dev/null", d / "out.tif"); },
     "character device"},
    {"fifo", [](fs::path const& d) { ::mkfifo((d / "out.tif").c_str(), 0600); }, "FIFO"},
    {"socket",
     [](fs::path const& d) {
       int const fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
       sockaddr_un addr{};
       addr.sun_family = AF_UNIX;
       std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", (d / "out.tif").c_str());
       (void)::bind(fd, reinterpret_cast<sockaddr const*>(&addr), sizeof addr);
       ::close(fd);
     },
     "socket"},
    {"char_device",
     [](fs::path const& d) {
       // A null device node of our own (root may make one); else a link to the system's.
       if (::mknod((d / "out.tif").c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0) {
         fs::create_symlink("/dev/null", d / "out.tif");
       }
     },
     "character device"},
    {"missing_directory", [](fs::path const&) {}, "does not exist", "{dir}/no/such/dir/out.tif"},
    {"parent_is_a_file", [](fs::path const&) {}, "in.xyz", "{in}/out.tif"},
    {"existing_without_overwrite", [](fs::path const& d) { std::ofstream(d / "out.tif") << "precious"; }, "--overwrite"},
  };
  std::vector<hostile_case> out;
  for (auto const& t : targets) {
    for (bool overwrite : {false, true}) {
      if (t.name == "existing_without_overwrite" && overwrite) { continue; }
      for (std::string const command : {"grid", "synth"}) {
        hostile_case c;
        c.name = "output_" + command + "_" + t.name + (overwrite ? "_overwrite" : "");
        auto const make = t.make;
        c.make = [make](fs::path const& dir) {
          make(dir);
          return small_xyz(dir);
        };
        if (command == "grid") {
          c.args = {"grid", "{in}", "-o", t.output, "--res", "1"};
        } else {
          c.args = {"synth", "uniform", "--points", "100", "-o", t.output};
        }
        if (overwrite) { c.args.push_back("--overwrite"); }
        c.code = 4;
        c.says = {t.says};
        out.push_back(c);
      }
    }
  }
  // The output is the input, however it is named.
  for (std::string const form : {"{in}", "{dir}/./in.xyz", "{dir}/../" }) {
    if (form == "{dir}/../") { continue; }
    hostile_case c;
    c.name = std::string("output_is_input_") + (form == "{in}" ? "same_name" : "dot_path");
    c.make = small_xyz;
    c.args = {"grid", "{in}", "-o", form, "--res", "1", "--overwrite"};
    c.code = 4;
    c.says = {"is the input"};
    out.push_back(c);
  }
  return out;
}

}  // namespace heightgrid::test
