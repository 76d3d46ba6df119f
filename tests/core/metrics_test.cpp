#include "heightgrid/core/error.hpp"
#include "heightgrid/core/metrics.hpp"

#include <gtest/gtest.h>
#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <numeric>
#include <random>

namespace heightgrid {
namespace {

metric_request all_metrics()
{
  return metric_request::from({metric::range, metric::min, metric::max, metric::count, metric::mean,
                               metric::stddev});
}

// The STYLE.md example: offsets=[0,3,3,7] z=[8,6,7,5,3,0,9] -> min=[6,nan,0].
TEST(Metrics, HandCheckedExample)
{
  csr_grid csr;
  csr.offsets = {0, 3, 3, 7};
  csr.z = {8, 6, 7, 5, 3, 0, 9};
  auto const r = reduce_cells_cpu(csr, all_metrics());
  EXPECT_EQ(r.min[0], 6.0F);
  EXPECT_TRUE(std::isnan(r.min[1]));
  EXPECT_EQ(r.min[2], 0.0F);
  EXPECT_EQ(r.max[0], 8.0F);
  EXPECT_EQ(r.max[2], 9.0F);
  EXPECT_EQ(r.range[0], 2.0F);
  EXPECT_TRUE(std::isnan(r.range[1]));
  EXPECT_EQ(r.range[2], 9.0F);
  EXPECT_EQ(r.count, (column<std::uint32_t>{3, 0, 4}));
  EXPECT_EQ(r.mean[0], 7.0F);
  EXPECT_EQ(r.mean[2], 4.25F);
  EXPECT_FLOAT_EQ(r.stddev[0], static_cast<float>(std::sqrt(2.0 / 3.0)));
  EXPECT_TRUE(std::isnan(r.stddev[1]));
}

TEST(Metrics, OnePointCellHasRangeZeroAndEmptyCellsTakeTheNodataValue)
{
  csr_grid csr;
  csr.offsets = {0, 1, 1};
  csr.z = {42.5};
  auto const r = reduce_cells_cpu(csr, all_metrics(), -9999.0F);
  EXPECT_EQ(r.range[0], 0.0F);
  EXPECT_EQ(r.stddev[0], 0.0F);
  EXPECT_EQ(r.range[1], -9999.0F);
  EXPECT_EQ(r.min[1], -9999.0F);
  EXPECT_EQ(r.count[1], 0U);
}

TEST(Metrics, OnlyRequestedColumnsAreFilled)
{
  csr_grid csr;
  csr.offsets = {0, 2};
  csr.z = {1.0, 2.0};
  auto const r = reduce_cells_cpu(csr, metric_request::from({metric::range}));
  EXPECT_EQ(r.range.size(), 1U);
  EXPECT_TRUE(r.min.empty());
  EXPECT_TRUE(r.count.empty());
  EXPECT_TRUE(r.stddev.empty());
}

TEST(Metrics, RangeIsRoundedOnceFromDoubles)
{
  // Large elevations: rounding min and max to float first would lose the 1 mm range.
  csr_grid csr;
  csr.offsets = {0, 2};
  csr.z = {4849497.901, 4849497.902};
  auto const r = reduce_cells_cpu(csr, all_metrics());
  EXPECT_EQ(r.range[0], static_cast<float>(4849497.902 - 4849497.901));
  EXPECT_NE(r.range[0], static_cast<float>(4849497.902) - static_cast<float>(4849497.901));
}

TEST(Metrics, MatchesBruteForceOnRandomDataForAnyThreadCount)
{
  std::mt19937_64 rng(5);
  std::geometric_distribution<int> sizes(0.05);
  std::uniform_real_distribution<double> zs(-50.0, 3000.0);
  csr_grid csr;
  csr.offsets.push_back(0);
  for (int c = 0; c < 20000; ++c) {
    int const n = c % 97 == 0 ? 5000 : sizes(rng);
    for (int i = 0; i < n; ++i) { csr.z.push_back(zs(rng)); }
    csr.offsets.push_back(csr.z.size());
  }
  int const saved = omp_get_max_threads();
  omp_set_num_threads(1);
  auto const one = reduce_cells_cpu(csr, all_metrics());
  omp_set_num_threads(4);
  auto const four = reduce_cells_cpu(csr, all_metrics());
  omp_set_num_threads(saved);

  for (std::size_t c = 0; c + 1 < csr.offsets.size(); ++c) {
    auto const b = csr.z.begin() + static_cast<std::ptrdiff_t>(csr.offsets[c]);
    auto const e = csr.z.begin() + static_cast<std::ptrdiff_t>(csr.offsets[c + 1]);
    auto const n = static_cast<std::size_t>(e - b);
    ASSERT_EQ(one.count[c], n);
    if (n == 0) {
      ASSERT_TRUE(std::isnan(one.range[c]));
      continue;
    }
    double const lo = *std::min_element(b, e);
    double const hi = *std::max_element(b, e);
    ASSERT_EQ(one.min[c], static_cast<float>(lo));
    ASSERT_EQ(one.max[c], static_cast<float>(hi));
    ASSERT_EQ(one.range[c], static_cast<float>(hi - lo));
    long double sum = 0;
    for (auto it = b; it != e; ++it) { sum += *it; }
    long double const mean = sum / n;
    long double m2 = 0;
    for (auto it = b; it != e; ++it) { m2 += (*it - mean) * (*it - mean); }
    ASSERT_NEAR(one.mean[c], static_cast<float>(mean), std::abs(static_cast<float>(mean)) * 1.2e-7);
    ASSERT_NEAR(one.stddev[c], static_cast<float>(std::sqrt(m2 / n)),
                std::abs(static_cast<float>(std::sqrt(m2 / n))) * 1.2e-7 + 1e-9);
  }
  // bit-identical across thread counts
  EXPECT_EQ(0, std::memcmp(one.mean.data(), four.mean.data(), one.mean.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(one.stddev.data(), four.stddev.data(), one.stddev.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(one.range.data(), four.range.data(), one.range.size() * sizeof(float)));
}

TEST(Metrics, ParseList)
{
  EXPECT_EQ(parse_metric_list("range"), std::vector<metric>{metric::range});
  EXPECT_EQ(parse_metric_list("count,min,stddev"),
            (std::vector<metric>{metric::count, metric::min, metric::stddev}));
  EXPECT_THROW((void)parse_metric_list("range,bogus"), error);
  EXPECT_THROW((void)parse_metric_list("min,min"), error);
  EXPECT_THROW((void)parse_metric_list(""), error);
}

TEST(Metrics, TouchPagesStoresOnlyInsideItsRange)
{
  // Five pages of 0xAB; the range starts 100 bytes into the first page and ends 7 bytes into the
  // fourth: every byte outside it keeps its value, and the range's page starts read zero.
  constexpr std::size_t page = 4096;
  std::vector<unsigned char> memory(6 * page, 0xAB);
  unsigned char* const aligned =
    memory.data() + (page - reinterpret_cast<std::uintptr_t>(memory.data()) % page) % page;
  unsigned char* const begin = aligned + 100;
  std::size_t const bytes = 3 * page - 100 + 7;
  for (int threads : {1, 4}) {
    std::fill(memory.begin(), memory.end(), 0xAB);
    omp_set_num_threads(threads);
    touch_pages(begin, bytes);
    for (unsigned char const* p = memory.data(); p < memory.data() + memory.size(); ++p) {
      bool const inside = p >= begin && p < begin + bytes;
      bool const page_start = inside && (p == begin || static_cast<std::size_t>(p - aligned) % page == 0);
      if (!inside) { ASSERT_EQ(*p, 0xAB) << "byte " << (p - begin) << " from the range's start, " << threads << " threads"; }
      if (page_start) { ASSERT_EQ(*p, 0) << "page start " << (p - begin) << ", " << threads << " threads"; }
    }
  }
  std::fill(memory.begin(), memory.end(), 0xAB);
  touch_pages(begin, 0);
  touch_pages(nullptr, page);
  EXPECT_TRUE(std::all_of(memory.begin(), memory.end(), [](unsigned char c) { return c == 0xAB; }));
}

TEST(Metrics, PopulatePagesMapsEveryPageAndChangesNoByte)
{
  // 20 MiB mapped fresh (three pieces of the team's 8 MiB): none resident; a pattern written into
  // a few pages first (others filling the ring while it is mapped); after: every page resident,
  // the pattern intact, the rest zero.
  constexpr std::size_t page = 4096;
  std::size_t const bytes = (std::size_t{20} << 20) + 3 * page;
  void* const p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* const base = static_cast<unsigned char*>(p);
  std::vector<unsigned char> resident((bytes + page - 1) / page);
  auto const resident_pages = [&] {
    EXPECT_EQ(::mincore(p, bytes, resident.data()), 0);
    return std::count_if(resident.begin(), resident.end(), [](unsigned char r) { return (r & 1) != 0; });
  };
  for (std::size_t at : {std::size_t{5}, std::size_t{9} << 20, bytes - 1}) { base[at] = static_cast<unsigned char>(at % 251 + 1); }
  auto const before = resident_pages();
  EXPECT_LE(before, 3);
  omp_set_num_threads(4);
  if (!populate_pages(p, bytes)) {
    ::munmap(p, bytes);
    GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (Linux 5.14)";
  }
  EXPECT_EQ(resident_pages(), static_cast<std::ptrdiff_t>(resident.size()));
  for (std::size_t i = 0; i < bytes; ++i) {
    bool const written = i == 5 || i == (std::size_t{9} << 20) || i == bytes - 1;
    ASSERT_EQ(base[i], written ? static_cast<unsigned char>(i % 251 + 1) : 0) << "byte " << i;
  }
  EXPECT_TRUE(populate_pages(nullptr, 0));
  EXPECT_FALSE(populate_pages(base + 1, page)) << "an unaligned start";
  ::munmap(p, bytes);
}

}  // namespace
}  // namespace heightgrid
