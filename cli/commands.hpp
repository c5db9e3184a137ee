// The `moacert` subcommands. Each adds itself to the CLI11 app and sets the
// process's exit status through `status`: 0 holds, 1 a counterexample or a
// failed check, 2 bad usage or input (docs/design.md, "Command line").
#pragma once

#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

namespace moacert::cli {

// Bad usage or input: main prints the message on one line and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The command line as typed (each argument quoted where a shell would need
// it), for the certificates' provenance; main records it before parsing.
void record_command_line(int argc, const char* const* argv);
const std::string& command_line();
// `arg` as one word of a shell's command line: as is when plain, else in
// single quotes.
std::string shell_word(const std::string& arg);

void add_list(CLI::App& app, int& status);
void add_certify(CLI::App& app, int& status);
void add_reproduce(CLI::App& app, int& status);
void add_bench(CLI::App& app, int& status);
void add_oracle(CLI::App& app, int& status);
void add_report(CLI::App& app, int& status);

}  // namespace moacert::cli
