# moacert_add_certification(NAME name OP op PLUGIN_TARGET target
#                           [KERNEL name] [DTYPE f32] [CASES 200] [SEED 1]
#                           [SHAPE N=4096,D=128] [RULE apriori] [TIMEOUT 60])
#
# A CTest test NAME that certifies the plugin kernel built by the MODULE
# library PLUGIN_TARGET (`#KERNEL` picks one of a library's several kernels)
# as a kernel of OP: `moacert certify OP --plugin LIB.so[#KERNEL] ...`, its
# certificate in <binary dir>/moacert/NAME/. A counterexample fails the test
# with moacert's own report, whose last line is `reproduce: moacert
# reproduce TOKEN --plugin /abs/LIB.so#KERNEL`, a command that replays the
# counterexample as printed. SHAPE is passed as
# `--shape`, which needs a moacert that has it (docs/design.md, certify).
#
# The plugin is built by a test of its own (NAME.build_plugin) that NAME
# requires, so that `ctest` alone certifies the current sources; the
# builds share a lock, since two builds of one tree must not overlap.
#
# The seed is fixed (SEED, default 1) so that a CI run is reproducible.
function(moacert_add_certification)
  cmake_parse_arguments(PARSE_ARGV 0 C "" "NAME;OP;PLUGIN_TARGET;KERNEL;DTYPE;CASES;SEED;SHAPE;RULE;TIMEOUT" "")
  if(C_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "moacert_add_certification: unknown arguments ${C_UNPARSED_ARGUMENTS}")
  endif()
  foreach(required NAME OP PLUGIN_TARGET)
    if(NOT C_${required})
      message(FATAL_ERROR "moacert_add_certification: ${required} is required")
    endif()
  endforeach()
  if(NOT TARGET ${C_PLUGIN_TARGET})
    message(FATAL_ERROR "moacert_add_certification(${C_NAME}): no target ${C_PLUGIN_TARGET}")
  endif()
  if(NOT TARGET moacert::moacert)
    message(FATAL_ERROR "moacert_add_certification(${C_NAME}): find_package(moacert) first")
  endif()
  foreach(option DTYPE CASES SEED)
    set(default_DTYPE f32)
    set(default_CASES 200)
    set(default_SEED 1)
    if(NOT DEFINED C_${option})
      set(C_${option} ${default_${option}})
    endif()
  endforeach()

  set(spec "$<TARGET_FILE:${C_PLUGIN_TARGET}>")
  if(C_KERNEL)
    string(APPEND spec "#${C_KERNEL}")
  endif()
  set(args certify ${C_OP} --plugin "${spec}" --dtype ${C_DTYPE} --cases ${C_CASES}
           --seed ${C_SEED} --out ${CMAKE_CURRENT_BINARY_DIR}/moacert/${C_NAME})
  foreach(option SHAPE RULE TIMEOUT)
    if(DEFINED C_${option})
      string(TOLOWER ${option} flag)
      list(APPEND args --${flag} ${C_${option}})
    endif()
  endforeach()

  add_test(NAME ${C_NAME}.build_plugin
    COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target ${C_PLUGIN_TARGET} --config $<CONFIG>)
  set_tests_properties(${C_NAME}.build_plugin PROPERTIES
    FIXTURES_SETUP ${C_NAME}.plugin RESOURCE_LOCK moacert_build LABELS moacert)
  add_test(NAME ${C_NAME} COMMAND moacert::moacert ${args})
  set_tests_properties(${C_NAME} PROPERTIES FIXTURES_REQUIRED ${C_NAME}.plugin LABELS moacert)
endfunction()
