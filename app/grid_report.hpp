#pragma once
// What `heightgrid grid` says about a job it ran: the filter's tally for the summary line, and -v's
// account of each stage (busy time, throughput, the stage that bounds the run).

#include "pipeline/grid_job.hpp"

#include "heightgrid/core/point_filter.hpp"

#include <cstddef>
#include <string>

namespace heightgrid::app {

/// "1,234 filtered (1,000 by class, 234 by z)".
[[nodiscard]] std::string describe_filtered(filter_stats const& f);

/// -v: each stage's busy time and throughput, and the stage that bounds the run (spdlog debug).
void report_stages(grid_job_report const& r, double input_bytes, double open_s, std::size_t inputs, double write_s,
                   double total_s);

}  // namespace heightgrid::app
