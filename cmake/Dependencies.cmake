# Every dependency comes from Debian's packages (scripts/setup.sh installs
# them). Required parts fail the configure step with the package to install;
# optional parts (CUDA, LibTorch, MPI) are detected and reported in the
# summary, and the build works without each of them.

find_package(Boost 1.74 REQUIRED)                      # Multiprecision (header-only)
find_package(PkgConfig REQUIRED)
pkg_check_modules(MPFR REQUIRED IMPORTED_TARGET mpfr)  # libmpfr-dev
pkg_check_modules(GMP REQUIRED IMPORTED_TARGET gmp)    # libgmp-dev
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)

# libmpfi-dev ships no pkg-config file.
find_path(MPFI_INCLUDE_DIR mpfi.h REQUIRED)
find_library(MPFI_LIBRARY mpfi REQUIRED)
add_library(moacert::mpfi INTERFACE IMPORTED)
target_include_directories(moacert::mpfi SYSTEM INTERFACE ${MPFI_INCLUDE_DIR})
target_link_libraries(moacert::mpfi INTERFACE ${MPFI_LIBRARY} PkgConfig::MPFR PkgConfig::GMP)

find_package(rapidcheck REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(fmt REQUIRED)
find_package(hwy REQUIRED)
# Highway compiles each vector file once per x86 target it can dispatch to.
# SSSE3 and SSE4 sit between the SSE2 baseline and AVX2, which every x86-64
# CPU since 2013 has: dropping them takes two of five compilations out of
# every vector file (the build's longest steps), and a CPU without AVX2 runs
# the SSE2 code, correct and slower (docs/design.md#dependencies).
set_property(TARGET hwy::hwy APPEND PROPERTY INTERFACE_COMPILE_DEFINITIONS
  "HWY_DISABLED_TARGETS=(HWY_SSSE3|HWY_SSE4)")
find_package(dlpack REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Threads REQUIRED)

# RapidCheck's GoogleTest integration is a header (rapidcheck/gtest.h) in
# Debian's librapidcheck-dev; Debian's package exports the library only.
add_library(moacert::rapidcheck_gtest INTERFACE IMPORTED)
target_link_libraries(moacert::rapidcheck_gtest INTERFACE rapidcheck GTest::gtest)

# ---- optional parts -------------------------------------------------------
set(MOACERT_HAVE_TORCH OFF)
if(MOACERT_WITH_TORCH)
  # Torch's config module prints warnings about its own CUDA/Kineto state;
  # only its verdict matters here.
  find_package(Torch QUIET)
  if(Torch_FOUND)
    set(MOACERT_HAVE_TORCH ON)
  endif()
endif()

set(MOACERT_HAVE_CUDA OFF)
if(MOACERT_WITH_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(MOACERT_HAVE_CUDA ON)
  endif()
endif()

set(MOACERT_HAVE_MPI OFF)
if(MOACERT_WITH_MPI)
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(MOACERT_HAVE_MPI ON)
  endif()
endif()

find_program(MOACERT_GNUPLOT gnuplot)
