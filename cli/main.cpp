// moacert: certify transformer kernels against a high-precision oracle.
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "cli/ranks.hpp"
#include "kernels/registry.hpp"

namespace moacert::cli {

namespace {
std::string recorded_command_line;
}

std::string shell_word(const std::string& arg) {
  const bool plain =
      !arg.empty() && arg.find_first_not_of(
                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
                          "KLMNOPQRSTUVWXYZ0123456789-_=.,/:+@%") == std::string::npos;
  if (plain) return arg;
  std::string quoted = "'";  // a shell's single quotes; ' itself as '\''
  for (char ch : arg) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return quoted + "'";
}

void record_command_line(int argc, const char* const* argv) {
  recorded_command_line.clear();
  for (int i = 0; i < argc; ++i) {
    if (i > 0) recorded_command_line += ' ';
    recorded_command_line += shell_word(argv[i]);
  }
}

const std::string& command_line() {
  return recorded_command_line;
}

}  // namespace moacert::cli

namespace {

// Bad usage or input: every rank of an mpirun meets it alike (each checks
// the same arguments; the output folder is checked by the root, which tells
// the others), so rank 0 alone says it and every rank exits 2.
int refuse(const std::string& why) {
  if (moacert::cli::launch_from_environment().rank == 0) fmt::print(stderr, "moacert: {}\n", why);
  return 2;
}

// An error on this rank alone: said with the rank's number, and every rank
// ends (the others would wait for this one's records forever).
int fail_every_rank(const std::string& why, int status) {
  if (moacert::cli::sharing()) {
    fmt::print(stderr, "moacert: rank {}: {}\n", moacert::cli::ranks().rank(), why);
    moacert::cli::abort_ranks(status);
  }
  fmt::print(stderr, "moacert: {}\n", why);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  moacert::cli::record_command_line(argc, argv);
  CLI::App app{"moacert: certifies transformer kernels (ONF) against their definition (DNF)"};
  app.require_subcommand(1);
  // The version is defined once, by CMake's project(VERSION); certificates
  // carry the same string (reports::BuildInfo).
  app.set_version_flag("--version",
                       fmt::format("moacert {} ({})", MOACERT_VERSION, MOACERT_BUILD_FLAGS));
  int status = 0;
  moacert::cli::add_list(app, status);
  moacert::cli::add_certify(app, status);
  moacert::cli::add_reproduce(app, status);
  moacert::cli::add_bench(app, status);
  moacert::cli::add_oracle(app, status);
  moacert::cli::add_report(app, status);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return refuse(e.what());
  } catch (const moacert::cli::UsageError& e) {
    return refuse(e.what());
  } catch (const moacert::kernels::DeviceOutOfMemory& e) {  // a case the device cannot hold
    if (moacert::cli::sharing()) return fail_every_rank(e.what(), 2);
    return refuse(e.what());
  } catch (const std::invalid_argument& e) {  // shapes, layouts, problems
    if (moacert::cli::sharing()) return fail_every_rank(e.what(), 2);
    return refuse(e.what());
  } catch (const std::exception& e) {
    return fail_every_rank(std::string("internal error: ") + e.what(), 1);
  }
  return status;
}
