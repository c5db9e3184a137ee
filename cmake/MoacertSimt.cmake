# moacert_add_simt_plugin(TARGET SOURCES...): a plugin (a MODULE library)
# written in CUDA C++ against moacert/simt.h, built for the host emulator
# as moacert-simt-c++ builds it (docs/simt.md#building): sources compiled
# as C++20 with GCC's -fsanitize=thread instrumentation (compile step only:
# libmoacert_simt defines the callbacks, libtsan is never linked), -g, a
# red zone after each __shared__ variable (MOACERT_SIMT_COMPILE_OPTIONS), the
# dynamic shared arena of `extern __shared__` arrays defined by the
# wrapper's --extern-shared-tu, linked to moacert::simt.
#
# moacert_add_simt_executable(TARGET SOURCES...) does the same for a
# program (tests, benchmarks).
# Outside moacert's own build (an installed moacert: find_package(moacert),
# or this file included from <prefix>/lib/cmake/moacert), the runtime, the
# wrapper and the headers are found in the package's prefix first, then on
# the system.
if(CMAKE_PROJECT_NAME STREQUAL "moacert")
  # simt/CMakeLists.txt puts the assembler there.
  set(MOACERT_SIMT_AS_DIR ${PROJECT_BINARY_DIR}/lib/moacert/simt-as)
elseif(NOT TARGET moacert::simt)
  find_program(MOACERT_SIMT_WRAPPER moacert-simt-c++ HINTS ${moacert_BIN_DIR} REQUIRED)
  find_library(MOACERT_SIMT_LIBRARY moacert_simt HINTS ${moacert_LIB_DIR} REQUIRED)
  find_path(MOACERT_SIMT_INCLUDE_DIR moacert/simt.h HINTS ${moacert_INCLUDE_DIR} REQUIRED)
  add_library(moacert::simt SHARED IMPORTED)
  set_target_properties(moacert::simt PROPERTIES IMPORTED_LOCATION ${MOACERT_SIMT_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${MOACERT_SIMT_INCLUDE_DIR})
  set(MOACERT_SIMT_HOST_INCLUDE ${MOACERT_SIMT_INCLUDE_DIR}/moacert/simt_host)
  get_filename_component(_moacert_simt_libdir ${MOACERT_SIMT_LIBRARY} DIRECTORY)
  find_program(MOACERT_SIMT_AS as HINTS ${_moacert_simt_libdir}/moacert/simt-as NO_DEFAULT_PATH)
  if(MOACERT_SIMT_AS)
    get_filename_component(MOACERT_SIMT_AS_DIR ${MOACERT_SIMT_AS} DIRECTORY)
  endif()
endif()

# The compile options of a source for the emulator: GCC's ThreadSanitizer
# instrumentation (the callbacks are libmoacert_simt's), and, where the
# package has it, its assembler (-B), which leaves a red zone after each
# __shared__ variable so that the emulator bounds each by its own extent.
set(MOACERT_SIMT_COMPILE_OPTIONS -xc++ -fsanitize=thread -fno-extern-tls-init
  -fstack-clash-protection -g)
if(MOACERT_SIMT_AS_DIR)
  list(APPEND MOACERT_SIMT_COMPILE_OPTIONS -B${MOACERT_SIMT_AS_DIR}/)
endif()

function(_moacert_simt_target target)
  set(arena ${CMAKE_CURRENT_BINARY_DIR}/${target}_extern_shared.cpp)
  set(abs_sources)
  foreach(s IN LISTS ARGN)
    get_filename_component(abs ${s} ABSOLUTE)
    list(APPEND abs_sources ${abs})
    if(s MATCHES "\\.cu$")
      set_source_files_properties(${s} PROPERTIES LANGUAGE CXX COMPILE_OPTIONS "-xc++")
    endif()
  endforeach()
  add_custom_command(OUTPUT ${arena}
    COMMAND sh ${MOACERT_SIMT_WRAPPER} --extern-shared-tu ${abs_sources} > ${arena}
    DEPENDS ${abs_sources} ${MOACERT_SIMT_WRAPPER}
    COMMENT "extern __shared__ arena of ${target}" VERBATIM)
  target_sources(${target} PRIVATE ${arena})
  set_source_files_properties(${abs_sources} PROPERTIES COMPILE_OPTIONS "${MOACERT_SIMT_COMPILE_OPTIONS}")
  target_link_libraries(${target} PRIVATE moacert::simt)
  # simt.h needs C++20 (std::bit_cast), whatever the project's standard.
  target_compile_features(${target} PRIVATE cxx_std_20)
  target_include_directories(${target} SYSTEM PRIVATE ${MOACERT_SIMT_HOST_INCLUDE})
endfunction()

function(moacert_add_simt_plugin target)
  add_library(${target} MODULE ${ARGN})
  _moacert_simt_target(${target} ${ARGN})
endfunction()

function(moacert_add_simt_executable target)
  add_executable(${target} ${ARGN})
  _moacert_simt_target(${target} ${ARGN})
endfunction()
