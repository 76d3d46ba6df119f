// A main for the fuzz harnesses without libFuzzer: runs LLVMFuzzerTestOneInput once on every
// file given, and on every file of every directory given, in name order. CTest replays the
// committed corpus and the regression inputs (inputs that once failed) this way in every build,
// gcc included; a finding aborts, as under the fuzzer.
//   las_file_fuzz_replay tests/fuzz/corpus/las_file_fuzz tests/fuzz/regressions/las_file_fuzz

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const* data, std::size_t size);

int main(int argc, char** argv)
{
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    fs::path const p = argv[i];
    if (fs::is_directory(p)) {
      for (auto const& e : fs::directory_iterator(p)) {
        if (e.is_regular_file()) { inputs.push_back(e.path()); }
      }
    } else if (fs::is_regular_file(p)) {
      inputs.push_back(p);
    } else {
      std::fprintf(stderr, "%s: not a file or directory\n", argv[i]);
      return 2;
    }
  }
  std::sort(inputs.begin(), inputs.end());
  for (auto const& p : inputs) {
    std::ifstream in(p, std::ios::binary);
    std::vector<std::uint8_t> const bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "%s: cannot read\n", p.c_str());
      return 2;
    }
    std::fprintf(stderr, "replaying %s (%zu bytes)\n", p.c_str(), bytes.size());
    (void)LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("%zu inputs replayed\n", inputs.size());
  return 0;
}
