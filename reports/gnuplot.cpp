#include "reports/gnuplot.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace moacert::reports {

namespace {

// `command`'s standard output and its exit status (-1 when it cannot run).
std::pair<std::string, int> run(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {"", -1};
  std::string out;
  char buffer[1 << 14];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = ::pclose(pipe);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

}  // namespace

bool gnuplot_available() {
  return run("gnuplot --version 2>/dev/null").second == 0;
}

std::optional<std::string> gnuplot_svg(const std::string& script, std::string* why) {
  // The script through a private temporary file: gnuplot reads it, and its
  // standard output is the SVG.
  std::string path = (std::filesystem::temp_directory_path() / "moacert-plot-XXXXXX").string();
  const int fd = ::mkstemp(path.data());
  if (fd < 0) {
    if (why) *why = "cannot create a temporary file for gnuplot";
    return std::nullopt;
  }
  ::close(fd);
  {
    std::ofstream f(path);
    f << "set terminal svg size 640,360 dynamic enhanced font 'sans,11'\nset output\n" << script;
  }
  const auto [svg, status] = run("gnuplot '" + path + "' 2>/dev/null");
  std::remove(path.c_str());
  const std::size_t start = svg.find("<svg");
  const std::size_t end = svg.rfind("</svg>");
  if (status != 0 || start == std::string::npos || end == std::string::npos) {
    if (why) *why = status == 127 ? "gnuplot is not on the PATH" : "gnuplot failed";
    return std::nullopt;
  }
  return svg.substr(start, end + 6 - start);  // without the XML prolog and DOCTYPE
}

}  // namespace moacert::reports
