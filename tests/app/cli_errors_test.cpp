// End-to-end tests of how `heightgrid grid` fails: bad input, bad options and an unusable output
// give a clear message naming the file or value, the documented exit code, and no output left
// behind; a write that fails part-way (file size limit, as on a full disk) leaves nothing, and an
// existing output survives a failed overwrite.

#include "cli_fixture.hpp"

#include "heightgrid/io/las_writer.hpp"
#include "heightgrid/kernels/gpu.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace heightgrid::test {
namespace {

using run_result = cli_result;

// ---- bad input: a clear message naming the file, a non-zero exit, and no output left behind

void expect_failure(run_result const& r, int code, std::string const& needle, fs::path const& output)
{
  EXPECT_EQ(r.code, code) << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << "expected '" << needle << "' in: " << r.output;
  EXPECT_NE(r.output.find("error"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(output)) << output;
  for (auto const& e : fs::directory_iterator(output.parent_path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "temporary left: " << e.path();
  }
}

TEST_F(Cli, MissingInput)
{
  auto const o = out("o.tif");
  expect_failure(run("grid " + out("nope.xyz").string() + " -o " + o.string() + " --res 1"), 3, "nope.xyz", o);
}

TEST_F(Cli, UnknownFormat)
{
  std::ofstream(out("junk.bin"), std::ios::binary) << std::string("\x01\x02\x03\x04garbage", 11);
  auto const o = out("o.tif");
  expect_failure(run("grid " + out("junk.bin").string() + " -o " + o.string() + " --res 1"), 3, "junk.bin", o);
}

TEST_F(Cli, EmptyInput)
{
  std::ofstream(out("empty.xyz")) << "x y z\n";
  auto const o = out("o.tif");
  expect_failure(run("grid " + out("empty.xyz").string() + " -o " + o.string() + " --res 1"), 3, "empty.xyz", o);
}

TEST_F(Cli, MalformedTextLine)
{
  std::ofstream(out("bad.xyz")) << "1 2 3\n4 five 6\n";
  auto const o = out("o.tif");
  expect_failure(run("grid " + out("bad.xyz").string() + " -o " + o.string() + " --res 1"), 3, "bad.xyz", o);
}

TEST_F(Cli, NonFiniteCoordinatesAreSkippedWithAWarning)
{
  std::ofstream(out("nan.xyz")) << "0.5 0.5 1\nnan 1 2\n1.5 0.5 inf\n0.7 0.2 3\n";
  auto const r = run("grid " + out("nan.xyz").string() + " -o " + out("o.tif").string() + " --res 1 --metrics range,count");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped 2 points with NaN or infinite"), std::string::npos) << r.output;
  auto const ras = read_raster(out("o.tif"));
  EXPECT_EQ(ras.values[0], (std::vector<double>{2.0}));
}

TEST_F(Cli, BadResolutions)
{
  auto const o = out("o.tif");
  for (std::string const res : {"0", "-1", "nan"}) {
    expect_failure(run("grid " + data("sample.xyz").string() + " -o " + o.string() + " --res " + res), 2,
                   "resolution", o);
  }
  expect_failure(run("grid " + data("sample.xyz").string() + " -o " + o.string()), 2, "--res", o);
  // absurd: 1e-9 m cells over metres of data -> refused up front with the numbers
  expect_failure(run("grid " + data("sample.xyz").string() + " -o " + o.string() + " --res 1e-9"), 5, "coarser", o);
}

TEST_F(Cli, GridLargerThanMemoryIsRefusedWithTheNumbers)
{
  auto const o = out("o.tif");
  // 60000 x 60000 cells: 3.6e9 cells fit in 32 bits; their accumulators (~100 GB) in 1 GiB would
  // take ~100 passes over the input, more than the pipeline accepts.
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + o.string() +
                     " --res 1 --te 0 0 60000 60000 --metrics range,min,max,count,mean,stddev --memory 1G");
  expect_failure(r, 5, "memory", o);
  EXPECT_NE(r.output.find("--res"), std::string::npos) << r.output;
}

TEST_F(Cli, UnwritableOutput)
{
  auto const o = fs::path("/nonexistent-dir-heightgrid/o.tif");
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + o.string() + " --res 1");
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("nonexistent-dir-heightgrid"), std::string::npos) << r.output;
}

TEST_F(Cli, OutputEqualToInputIsRefused)
{
  fs::copy_file(data("dem_small.tif"), out("dem.tif"));
  auto const before = fs::file_size(out("dem.tif"));
  auto const r = run("grid " + out("dem.tif").string() + " -o " + out("dem.tif").string() + " --res 20 --overwrite");
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("dem.tif"), std::string::npos) << r.output;
  EXPECT_EQ(fs::file_size(out("dem.tif")), before);
}

TEST_F(Cli, ExistingOutputNeedsOverwrite)
{
  std::ofstream(out("o.tif")) << "precious";
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + out("o.tif").string() + " --res 1");
  EXPECT_EQ(r.code, 4) << r.output;
  EXPECT_NE(r.output.find("--overwrite"), std::string::npos) << r.output;
  std::ifstream in(out("o.tif"));
  std::string content;
  in >> content;
  EXPECT_EQ(content, "precious");
  ASSERT_EQ(run("grid " + data("sample.xyz").string() + " -o " + out("o.tif").string() + " --res 1 --overwrite").code, 0);
  EXPECT_EQ(read_raster(out("o.tif")).cols, 3);
}

TEST_F(Cli, BadOptionValues)
{
  auto const o = out("o.tif");
  auto const base = "grid " + data("sample.xyz").string() + " -o " + o.string() + " --res 1 ";
  expect_failure(run(base + "--metrics range,bogus"), 2, "bogus", o);
  expect_failure(run(base + "--nodata abc"), 2, "abc", o);
  expect_failure(run(base + "--of PNG"), 2, "PNG", o);
  expect_failure(run(base + "--co NOEQUALS"), 2, "NOEQUALS", o);
  expect_failure(run(base + "--a_srs EPSG:999999999"), 2, "EPSG:999999999", o);
  expect_failure(run(base + "--device tpu"), 2, "tpu", o);
  expect_failure(run(base + "--returns middle"), 2, "middle", o);
  expect_failure(run(base + "--read-ahead lots"), 2, "--read-ahead", o);
  expect_failure(run(base + "--laz-decoder fpga"), 2, "--laz-decoder: 'fpga' is not auto, cpu, gpu or both", o);
  // 0 turns reading ahead of the GPU off; any size is a usable value on any device.
  ASSERT_EQ(run(base + "--read-ahead 0").code, 0);
  ASSERT_EQ(run(base + "--read-ahead 64M --overwrite").code, 0);
  // Seconds of waiting for device memory other processes hold: a finite number >= 0.
  auto const w = out("wait.tif");
  auto const waits = "grid " + data("sample.xyz").string() + " -o " + w.string() + " --res 1 --gpu-memory-wait ";
  expect_failure(run(waits + "-1"), 2, "--gpu-memory-wait", w);
  expect_failure(run(waits + "soon"), 2, "--gpu-memory-wait", w);
  expect_failure(run(waits + "inf"), 2, "--gpu-memory-wait", w);
  ASSERT_EQ(run(waits + "0").code, 0);
}

TEST_F(Cli, TruncatedLas)
{
  std::vector<heightgrid::io::las_point> pts(1000);
  for (std::size_t i = 0; i < pts.size(); ++i) { pts[i].x = pts[i].y = pts[i].z = static_cast<double>(i); }
  heightgrid::io::write_las(out("full.las").string(), pts, {});
  fs::copy_file(out("full.las"), out("cut.las"));
  fs::resize_file(out("cut.las"), fs::file_size(out("full.las")) - 700);
  auto const o = out("o.tif");
  auto const r = run("grid " + out("cut.las").string() + " -o " + o.string() + " --res 1");
  expect_failure(r, 3, "cut.las", o);
  EXPECT_NE(r.output.find("byte"), std::string::npos) << r.output;
}

TEST_F(Cli, GpuRequestedWithoutAGpu)
{
  // On a machine with a usable GPU this is a real run; without one it must fail clearly.
  auto const o = out("o.tif");
  auto const r = run("grid " + data("sample.xyz").string() + " -o " + o.string() +
                     " --res 1 --metrics range,min,max,count --device gpu");
  // Decided by whether a GPU is there, not by the result: a silent CPU fallback must fail.
  if (heightgrid::gpu_available()) {
    ASSERT_EQ(r.code, 0) << r.output;
    expect_sample_bands(read_raster(o));
  } else {
    expect_failure(r, 6, "--device gpu", o);
    auto const a = run("grid " + data("sample.xyz").string() + " -o " + o.string() +
                       " --res 1 --metrics range,min,max,count --device auto");
    EXPECT_EQ(a.code, 0) << a.output;
    expect_sample_bands(read_raster(o));
  }
}

TEST_F(Cli, GpuRequestedForASmallLasJobAsksTheDriverFromAHelperProcess)
{
  // The CPU bins these 1,000 points before a GPU context could pay: --device gpu's check that there
  // is a GPU goes to a helper process (app/pipeline/driver_helper.hpp), whose answer decides as the
  // driver's own would. `-vv` says where the answer came from.
  std::vector<heightgrid::io::las_point> pts(1000);
  for (std::size_t i = 0; i < pts.size(); ++i) {
    pts[i].x = static_cast<double>(i % 40);
    pts[i].y = static_cast<double>(i / 40);
    pts[i].z = static_cast<double>(i % 7);
  }
  heightgrid::io::write_las(out("small.las").string(), pts, {});
  auto const o = out("o.tif");
  auto const r = run("grid " + out("small.las").string() + " -o " + o.string() + " --res 1 --device gpu -vv");
  if (heightgrid::gpu_available()) {
    ASSERT_EQ(r.code, 0) << r.output;
    EXPECT_NE(r.output.find("the helper process: the driver found the GPU"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("asked by a helper process"), std::string::npos) << r.output;
    auto const c = out("cpu.tif");
    auto const rc = run("grid " + out("small.las").string() + " -o " + c.string() + " --res 1 --device cpu");
    ASSERT_EQ(rc.code, 0) << rc.output;
    EXPECT_EQ(heightgrid::test::file_bytes(o), heightgrid::test::file_bytes(c));
  } else {
    expect_failure(r, 6, "--device gpu", o);
    EXPECT_NE(r.output.find("the helper process: no usable GPU"), std::string::npos) << r.output;
  }
  // --gpu-start wait sends every batch to the GPU: the job's own thread asks the driver.
  auto const w = run("grid " + out("small.las").string() + " -o " + o.string() +
                     " --res 1 --device gpu --gpu-start wait --overwrite -vv");
  EXPECT_EQ(w.output.find("the helper process"), std::string::npos) << w.output;
  EXPECT_EQ(w.code, heightgrid::gpu_available() ? 0 : 6) << w.output;
  // A grid too large to keep on both sides (6.25 x 10^7 cells, over 512 MiB of host accumulators):
  // the GPU bins alone, so CUDA starts in the job's process once the headers are read.
  auto const big = run("grid " + out("small.las").string() + " -o " + o.string() +
                       " --res 0.004 --device gpu --overwrite -vv");
  EXPECT_EQ(big.output.find("the helper process"), std::string::npos) << big.output;
  EXPECT_EQ(big.code, heightgrid::gpu_available() ? 0 : 6) << big.output;
}

// ---- failures after the output has started: expect_failure above only meets errors raised before
// the temporary exists. Here the run may not write a file past a few KiB (RLIMIT_FSIZE, SIGXFSZ
// ignored: heightgrid::test::run_cli_file_limited), so GDAL's writes fail with EFBIG ("File too
// large") part-way through the cells, as on a full disk, with nothing added to the product.

/// Large enough for the whole GeoTIFF of the sample (under 2 KiB), far smaller than the cells
/// below: a failure under it comes from writing cells, not from creating the file.
constexpr std::uint64_t small_file_limit = 16 * 1024;

/// 200,000 points on a 2000 x 2000 grid: 16 MB of Float32 cells uncompressed.
std::vector<std::string> dense_grid(fs::path const& o)
{
  return {"grid", "--synth", "uniform", "--points", "200000", "--synth-extent", "0", "0", "2000", "2000",
          "--res", "1", "--device", "cpu", "-o", o.string()};
}

/// The same grid holding 2000 points in its 100 x 100 corner: nearly every cell is empty (NaN), so
/// the rows compress to a few KiB, while an uncompressed COG of it still takes 16 MB.
std::vector<std::string> sparse_grid(fs::path const& o)
{
  return {"grid", "--synth", "uniform", "--points", "2000", "--synth-extent", "0", "0", "100", "100",
          "--te", "0", "0", "2000", "2000", "--res", "1", "--device", "cpu", "-o", o.string()};
}

std::vector<std::string> with(std::vector<std::string> args, std::vector<std::string> const& more)
{
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

/// A failed write: exit 4 (output not writable), the output named with the cause, no temporary
/// (".NAME.tmp-PID", the COG's ".NAME.tmp-PID.src", their ".aux.xml") left in the directory.
/// A failure while rows are written may also surface when the file is flushed: with GDAL's
/// compression threads (NUM_THREADS=ALL_CPUS) on a many-core host the row writes only queue.
void expect_write_failure(run_result const& r, fs::path const& output, std::string const& phase)
{
  EXPECT_EQ(r.code, 4) << r.output;
  bool const named = r.output.find("error: " + output.string() + ": " + phase) != std::string::npos ||
                     (phase == "cannot write cells at row " &&
                      r.output.find("error: " + output.string() + ": cannot write: ") != std::string::npos);
  EXPECT_TRUE(named) << "expected '" << output.string() << ": " << phase << "' in: " << r.output;
  EXPECT_NE(r.output.find("File too large"), std::string::npos) << "the cause is not named: " << r.output;
  for (auto const& e : fs::directory_iterator(output.parent_path())) {
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "temporary left: " << e.path();
  }
}

TEST_F(Cli, FileSizeLimitAdmitsASmallGeoTiff)
{
  // The control of the tests below: under the same limit a whole (small) GeoTIFF and COG are
  // written, so their failures are those of writing cells.
  for (std::string const format : {"GTiff", "COG"}) {
    auto const o = out("small-" + format + ".tif");
    auto const r = heightgrid::test::run_cli_file_limited(
      {"grid", data("sample.xyz").string(), "-o", o.string(), "--res", "1", "--metrics", "range,min,max,count",
       "--device", "cpu", "--of", format},
      small_file_limit);
    ASSERT_EQ(r.code, 0) << format << ": " << r.output;
    EXPECT_LT(fs::file_size(o), small_file_limit) << format;
    expect_sample_bands(read_raster(o));
  }
}

TEST_F(Cli, GeoTiffWriteFailingPartWayLeavesNothing)
{
  // Uncompressed: the cells go straight to the file. Compressed (the default): blocks are
  // compressed and written on GDAL's worker threads.
  for (auto const& codec : std::vector<std::vector<std::string>>{{"--co", "COMPRESS=NONE"}, {}}) {
    auto const o = out("dense.tif");
    auto const r = heightgrid::test::run_cli_file_limited(with(dense_grid(o), codec), small_file_limit);
    SCOPED_TRACE(codec.empty() ? "default compression" : codec.back());
    expect_write_failure(r, o, "cannot write cells at row ");
    EXPECT_FALSE(fs::exists(o));
  }
}

TEST_F(Cli, CogWriteFailingPartWayLeavesNothing)
{
  // A COG is written in two steps: the rows to a GTiff beside the target, then GDAL's
  // CreateCopy to the COG driver. Each step fails once.
  auto const o = out("cog.tif");
  // 1. The rows do not fit: the GTiff the COG is made from fails.
  auto const rows = heightgrid::test::run_cli_file_limited(with(dense_grid(o), {"--of", "COG"}), small_file_limit);
  expect_write_failure(rows, o, "cannot write cells at row ");
  EXPECT_FALSE(fs::exists(o));
  // 2. The rows fit in 1 MiB (the writer keeps them in a compressed GTiff; as the default GTiff
  //    they take a few KiB, checked first), the uncompressed COG (16 MB) does not: CreateCopy
  //    fails, after every row was written.
  constexpr std::uint64_t limit = 1024 * 1024;
  auto const gtiff = out("sparse-gtiff.tif");
  auto const rows_fit = heightgrid::test::run_cli_file_limited(sparse_grid(gtiff), limit);
  ASSERT_EQ(rows_fit.code, 0) << rows_fit.output;
  EXPECT_LT(fs::file_size(gtiff), limit / 8);
  auto const copy =
    heightgrid::test::run_cli_file_limited(with(sparse_grid(o), {"--of", "COG", "--co", "COMPRESS=NONE"}), limit);
  expect_write_failure(copy, o, "cannot write the COG: ");
  EXPECT_FALSE(fs::exists(o));
  // Without the limit the same run succeeds: the limit alone made it fail.
  auto const full = heightgrid::test::run_cli_file_limited(with(sparse_grid(o), {"--of", "COG", "--co", "COMPRESS=NONE"}),
                                                           std::uint64_t{1} << 40);
  ASSERT_EQ(full.code, 0) << full.output;
  EXPECT_GT(fs::file_size(o), limit);
}

TEST_F(Cli, ExistingOutputSurvivesAFailedOverwrite)
{
  auto const o = out("old.tif");
  ASSERT_EQ(run("grid " + data("sample.xyz").string() + " -o " + o.string() +
                " --res 1 --metrics range,min,max,count --device cpu")
              .code,
            0);
  std::ofstream(out("old.tif.aux.xml")) << "<PAMDataset/>\n";  // a side-car of the old file
  auto const before = file_bytes(o);
  auto const aux_before = file_bytes(out("old.tif.aux.xml"));
  ASSERT_FALSE(before.empty());
  struct attempt {
    std::string what;
    std::vector<std::string> args;
    std::uint64_t limit;
    std::string phase;
  };
  std::vector<attempt> const attempts{
    {"GTiff cells", with(dense_grid(o), {"--overwrite", "--co", "COMPRESS=NONE"}), small_file_limit,
     "cannot write cells at row "},
    {"COG rows", with(dense_grid(o), {"--overwrite", "--of", "COG"}), small_file_limit, "cannot write cells at row "},
    {"COG CreateCopy", with(sparse_grid(o), {"--overwrite", "--of", "COG", "--co", "COMPRESS=NONE"}), 1024 * 1024,
     "cannot write the COG: "},
  };
  for (auto const& a : attempts) {
    SCOPED_TRACE(a.what);
    expect_write_failure(heightgrid::test::run_cli_file_limited(a.args, a.limit), o, a.phase);
    EXPECT_TRUE(file_bytes(o) == before) << "the existing output was changed";
    EXPECT_TRUE(file_bytes(out("old.tif.aux.xml")) == aux_before) << "its side-car was changed";
  }
  expect_sample_bands(read_raster(o));
}

}  // namespace
}  // namespace heightgrid::test
