// `moacert oracle OP --input CASE.json --output OUT.json [--precision BITS]
// [--digits K] [--rows SEL]`: the oracle's answer to one case file, in the
// same form (docs/design.md, "Case files"; docs/case-files.md). A bad case
// file or selection exits 2 with one line naming it, and nothing is written.
#include <optional>
#include <string>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/budget.hpp"
#include "cli/commands.hpp"
#include "cli/numbers.hpp"
#include "files/atomic_write.hpp"
#include "oracle/case_json.hpp"
#include "oracle/oracle.hpp"
#include "oracle/selection.hpp"

namespace moacert::cli {

namespace {

struct OracleArgs {
  std::string op, input, output;
  int precision = oracle::Options{}.max_precision;
  int threads = 0;
  std::string max_memory;
  // The "exact" strings' digits: none unless asked. What a user of the
  // answer compares with is the correctly rounded value in the case's
  // format; 40 digits cost an MPFI narrowing of every element, 50 times
  // the rest of the answer (docs/performance.md#oracle).
  int digits = 0;
  std::string rows;  // empty: every element
};

int run_oracle(const OracleArgs& args) {
  if (!parse_op(args.op)) throw UsageError("oracle: unknown op \"" + args.op + "\"");
  check_threads(args.threads, "oracle");
  const Case c = oracle::read_case_file(args.input);
  if (info(c.problem.op).name != args.op) {
    throw UsageError("oracle: " + args.input + " is a case of " +
                     std::string(info(c.problem.op).name) + ", not " + args.op);
  }
  oracle::Options options;
  options.max_precision = args.precision;
  options.threads = args.threads;
  // K digits need an enclosure 2^-(3.33 K + 4) narrow, which the cap must
  // allow; 0 digits need only the rounding decided (no DD narrowing either:
  // the answer file carries no DD).
  if (oracle::bits_for_digits(args.digits) > args.precision) {
    throw UsageError("oracle: --digits " + std::to_string(args.digits) + " needs " +
                     std::to_string(oracle::bits_for_digits(args.digits)) +
                     " bits of precision, above --precision " + std::to_string(args.precision));
  }
  options.exact_digits = args.digits;
  if (args.digits == 0) options.exact_ulp_bits = 0;
  if (!args.rows.empty()) {
    try {
      options.rows = oracle::parse_selection(args.rows, c.problem);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("oracle: ") + e.what());
    }
  }
  // The budget of the rows asked (--rows), known in full.
  const std::optional<oracle::SelectionBound> sample =
      options.rows ? std::optional(oracle::SelectionBound{*options.rows}) : std::nullopt;
  check_budget(c.problem,
               args.max_memory.empty() ? default_max_memory() : parse_bytes(args.max_memory),
               "oracle: " + args.input,
               {.oracle_precision = args.precision,
                .oracle_threads = args.threads,
                .oracle_digits = args.digits,
                .sample = sample ? &*sample : nullptr});
  const oracle::Answer a = oracle::evaluate(c, options);
  try {
    files::write_atomically(args.output, oracle::case_file_text(oracle::write_answer(c, a)));
  } catch (const std::runtime_error& e) {  // a path we cannot write: bad usage
    throw UsageError(std::string("oracle: ") + e.what());
  }
  if (a.undetermined > 0) {
    fmt::print(stderr,
               "moacert: oracle: {} of {} elements undetermined at {} bits (listed in {})\n",
               a.undetermined, a.elements, args.precision, args.output);
  }
  return 0;
}

}  // namespace

void add_oracle(CLI::App& app, int& status) {
  auto args = std::make_shared<OracleArgs>();
  CLI::App* cmd =
      app.add_subcommand("oracle", "the oracle's correctly rounded answer to a case file");
  cmd->add_option("op", args->op, "the op (must match the case's)")->required();
  cmd->add_option("--input", args->input, "the case file (JSON)")->required();
  cmd->add_option("--output", args->output, "where to write the answer (JSON)")->required();
  cmd->add_option("--precision", args->precision,
                  "the precision cap in bits (elements still undecided are reported)")
      ->check(CLI::Range(53, 1 << 20));
  cmd->add_option("--threads", args->threads, "threads (0: the OpenMP default)");
  cmd->add_option(
         "--digits", args->digits,
         "significant digits of the \"exact\" strings (default 0: none, no narrowing for them)")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--rows", args->rows,
                  "evaluate these rows only, e.g. \"q=0,5..9;k=3\" (flat row indices, "
                  "docs/oracle.md#sampled)");
  cmd->add_option("--max-memory", args->max_memory,
                  "refuse a case needing more, e.g. 4G (default: half the RAM)");
  cmd->callback([args, &status] { status = run_oracle(*args); });
}

}  // namespace moacert::cli
