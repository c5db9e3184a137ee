// Files written whole or not at all (docs/design.md, "Command line"): a
// reader, an interrupted run or a second run writing the same folder sees
// the previous complete file or the new complete file, never part of one.
#pragma once

#include <filesystem>
#include <string_view>

namespace moacert::files {

// Writes `text` to `path` atomically: to a temporary file with a unique name
// (mkstemp) in the same folder, flushed to disk, then renamed over `path`
// (rename(2) replaces the target in one step on one file system). On failure
// the temporary file is removed, `path` is untouched, and
// std::runtime_error names the path.
//
// Test hook: when the environment variable MOACERT_STOP_BEFORE_RENAME equals
// `path`'s file name, the process stops itself (SIGSTOP) with the temporary
// file complete and the rename not yet done, so that a test can kill it
// there (tests/cli/atomic_write_check.sh).
void write_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace moacert::files
