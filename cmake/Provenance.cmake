# What a certificate says about the build that produced it (reports/
# provenance.cpp, docs/certificate.md#provenance), fixed at configure time:
# the compiler and its flags, and the versions of the libraries the results
# depend on. Sets MOACERT_PROVENANCE_DEFINITIONS. The git commit is not
# among them: it is a build-time value (cmake/GitCommit.cmake), so that a
# commit re-runs no configure step.

# RapidCheck has no version macro: Debian's package version.
set(moacert_rapidcheck_version unknown)
execute_process(COMMAND dpkg-query -W -f=\${Version} librapidcheck-dev
  OUTPUT_VARIABLE v RESULT_VARIABLE rc ERROR_QUIET)
if(rc EQUAL 0 AND v)
  set(moacert_rapidcheck_version "${v} (Debian librapidcheck-dev)")
endif()

# MPFI ships no pkg-config file: its header's version string.
set(moacert_mpfi_version unknown)
file(STRINGS "${MPFI_INCLUDE_DIR}/mpfi.h" line REGEX "define MPFI_VERSION_STRING")
if(line MATCHES "\"([^\"]+)\"")
  set(moacert_mpfi_version ${CMAKE_MATCH_1})
endif()

set(moacert_torch_version absent)
if(MOACERT_HAVE_TORCH)
  set(moacert_torch_version ${Torch_VERSION})
endif()
# nvcc's own statement ("Cuda compilation tools, release 13.0, V13.0.88").
set(moacert_cuda_version absent)
if(MOACERT_HAVE_CUDA)
  execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --version OUTPUT_VARIABLE v ERROR_QUIET)
  if(v MATCHES "release [0-9.]+, V([0-9.]+)")
    set(moacert_cuda_version "nvcc ${CMAKE_MATCH_1}")
  else()
    set(moacert_cuda_version "nvcc (version unknown)")
  endif()
endif()

string(TOUPPER "${CMAKE_BUILD_TYPE}" build_type)
string(STRIP "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${build_type}}" cxx_flags)
set(MOACERT_PROVENANCE_DEFINITIONS
  MOACERT_COMPILER="${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}"
  MOACERT_CXX_FLAGS="${CMAKE_BUILD_TYPE}: ${cxx_flags} -std=c++${CMAKE_CXX_STANDARD}"
  MOACERT_MPFR_VERSION="${MPFR_VERSION}"
  MOACERT_MPFI_VERSION="${moacert_mpfi_version}"
  MOACERT_BOOST_VERSION="${Boost_VERSION}"
  MOACERT_RAPIDCHECK_VERSION="${moacert_rapidcheck_version}"
  MOACERT_TORCH_VERSION="${moacert_torch_version}"
  MOACERT_CUDA_VERSION="${moacert_cuda_version}")
