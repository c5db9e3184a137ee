# The git commit is a build-time value (cmake/GitCommit.cmake), not a
# configure dependency: no git file (HEAD, a branch ref, the index) is
# among the files whose change re-runs CMake, and the generated source
# holds the commit the tree is at.
#   cmake -DBUILD=dir -DSOURCE=dir -DGIT=git -P commit_at_build_time.cmake
file(STRINGS ${BUILD}/build.ninja rerun REGEX "^build build\\.ninja")
if(NOT rerun)
  message(FATAL_ERROR "no configure rule in ${BUILD}/build.ninja (a Ninja build is needed)")
endif()
if(rerun MATCHES "\\.git/|/HEAD( |$)|/refs/")
  message(FATAL_ERROR "configure re-runs on a git file: ${rerun}")
endif()
execute_process(COMMAND ${GIT} -C ${SOURCE} rev-parse HEAD
  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(rc EQUAL 0)
  file(READ ${BUILD}/reports/git_commit.cpp generated)
  if(NOT generated MATCHES "\"${head}\"")
    message(FATAL_ERROR "the build's commit is not HEAD (${head}): ${generated}")
  endif()
endif()
