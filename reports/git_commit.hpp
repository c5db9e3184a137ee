// The git commit this build is of (40 hex digits; "unknown" outside git),
// written at build time by cmake/GitCommit.cmake into a generated source of
// its own: a new commit recompiles that one object, and re-runs no
// configure step.
#pragma once

namespace moacert::reports {

const char* git_commit();

}  // namespace moacert::reports
