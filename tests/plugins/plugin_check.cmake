# One `moacert` run with a plugin, checked from CTest:
#   cmake -DMOACERT=... -DARGS="certify|rmsnorm|--plugin|LIB#k|..." -DEXPECT_RC=0|1|2
#         [-DEXPECT_TEXT=regex] [-DLIB=/abs/lib.so] [-DOUT=dir] [-DREPRODUCE=ON]
#         [-DCASE_FILE=path] [-DEXPECT_CASE=regex] [-DEXPECT_CERTIFICATE=regex]
#         [-DREJECT_TEXT=regex]
#         -P plugin_check.cmake
# Exit 1 must print the reason and a `reproduce:` line (with CASE_FILE, a
# run of `certify --case`: the file's name instead), and, with
# REPRODUCE, that line, run as printed from another folder, must fail the
# same way (and print a case matching EXPECT_CASE: the shrunk
# counterexample).
# Exit 2 must come with exactly one line on stderr and leave no OUT folder.
# No worker of LIB may outlive moacert (the tests run the worker without
# its parent-death signal, so this checks moacert's own clean-up).
string(REPLACE "|" ";" args "${ARGS}")
if(DEFINED OUT)
  file(REMOVE_RECURSE "${OUT}")
endif()
# Run through sh, which writes its pid and then becomes moacert: the
# workers of this run (their command line names moacert's pid) can be told
# from those of a test running beside it with the same library.
string(RANDOM LENGTH 12 tag)
set(pidfile "${CMAKE_CURRENT_BINARY_DIR}/moacert-${tag}.pid")
execute_process(COMMAND sh -c "echo $$ > '${pidfile}'; exec \"$0\" \"$@\"" "${MOACERT}" ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ "${pidfile}" moacert_pid)
string(STRIP "${moacert_pid}" moacert_pid)
file(REMOVE "${pidfile}")
set(all "${out}${err}")
if(NOT rc EQUAL EXPECT_RC)
  message(FATAL_ERROR "exit ${rc}, expected ${EXPECT_RC}\nstdout: ${out}\nstderr: ${err}")
endif()
if(DEFINED EXPECT_TEXT AND NOT all MATCHES "${EXPECT_TEXT}")
  message(FATAL_ERROR "output does not match '${EXPECT_TEXT}'\nstdout: ${out}\nstderr: ${err}")
endif()
# REJECT_TEXT: a regex the output must not match.
if(REJECT_TEXT AND all MATCHES "${REJECT_TEXT}")
  message(FATAL_ERROR "output matches '${REJECT_TEXT}'\nstdout: ${out}\nstderr: ${err}")
endif()
# EXPECT_CERTIFICATE: a regex OUT/certificate.json must match.
if(EXPECT_CERTIFICATE)
  file(READ "${OUT}/certificate.json" certificate)
  if(NOT certificate MATCHES "${EXPECT_CERTIFICATE}")
    message(FATAL_ERROR "certificate.json does not match '${EXPECT_CERTIFICATE}':\n${certificate}")
  endif()
endif()
function(no_worker_left when pid)
  if(DEFINED LIB)
    execute_process(COMMAND pgrep -f "moacert-plugin-worker serve [0-9]+ ${pid} ${LIB}$"
      RESULT_VARIABLE found OUTPUT_VARIABLE pids)
    if(found EQUAL 0)
      message(FATAL_ERROR "a worker of ${LIB} outlived moacert ${when}: ${pids}")
    endif()
  endif()
endfunction()
no_worker_left("" ${moacert_pid})
if(EXPECT_RC EQUAL 2)
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "expected one line on stderr, got ${n}: ${err}")
  endif()
  if(DEFINED OUT AND EXISTS "${OUT}")
    message(FATAL_ERROR "a refused run left ${OUT}")
  endif()
endif()
if(EXPECT_RC EQUAL 1 AND CASE_FILE)  # certify --case: the failing file is named, no token
  if(NOT out MATCHES "case file ${CASE_FILE}")
    message(FATAL_ERROR "the failing case file is not named: ${out}")
  endif()
elseif(EXPECT_RC EQUAL 1)
  if(NOT out MATCHES "reproduce: moacert (reproduce mc1\\.[A-Za-z0-9_-]+[^\n]*)")
    message(FATAL_ERROR "no reproduce line: ${out}")
  endif()
  set(printed "${CMAKE_MATCH_1}")
  if(DEFINED REPRODUCE)
    # The line as printed, run from another folder: it must name the
    # library (by an absolute path) and the kernel, and the timeout.
    if(NOT printed MATCHES "--plugin")
      message(FATAL_ERROR "the reproduce line does not name the plugin: ${printed}")
    endif()
    separate_arguments(printed_args UNIX_COMMAND "${printed}")
    execute_process(COMMAND sh -c "echo $$ > '${pidfile}'; exec \"$0\" \"$@\"" "${MOACERT}"
                            ${printed_args}
      WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/.."
      RESULT_VARIABLE rrc OUTPUT_VARIABLE rout ERROR_VARIABLE rerr)
    file(READ "${pidfile}" reproduce_pid)
    string(STRIP "${reproduce_pid}" reproduce_pid)
    file(REMOVE "${pidfile}")
    if(NOT rrc EQUAL 1)
      message(FATAL_ERROR "reproduce exited ${rrc}, expected 1\n${rout}${rerr}")
    endif()
    if(DEFINED EXPECT_TEXT AND NOT "${rout}${rerr}" MATCHES "${EXPECT_TEXT}")
      message(FATAL_ERROR "reproduce does not match '${EXPECT_TEXT}':\n${rout}${rerr}")
    endif()
    if(DEFINED EXPECT_CASE AND NOT rout MATCHES "${EXPECT_CASE}")
      message(FATAL_ERROR "reproduce's case does not match '${EXPECT_CASE}':\n${rout}")
    endif()
    no_worker_left("(reproduce)" ${reproduce_pid})
  endif()
endif()
