// Plots for the HTML reports, drawn by gnuplot (`set terminal svg`) and
// inlined: the page needs nothing but itself (docs/design.md, "report.html").
#pragma once

#include <optional>
#include <string>

namespace moacert::reports {

// Runs gnuplot on `script` (data inline, as `$name << EOD` blocks; the
// terminal and output are set here) and returns the <svg> element it drew.
// nullopt when gnuplot is not on the PATH or fails; `why` then says which.
std::optional<std::string> gnuplot_svg(const std::string& script, std::string* why);

// Whether `gnuplot` runs at all (`gnuplot --version`).
bool gnuplot_available();

}  // namespace moacert::reports
