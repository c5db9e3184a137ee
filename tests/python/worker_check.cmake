# One `moacert` run with a bad worker (tests/python/bad_worker.py MODE),
# checked as tests/plugins/plugin_check.cmake checks a plugin's (exit
# status, text, one line on exit 2, no folder left), and then: no process
# of the worker outlives moacert (each mode's command line is its own).
#   cmake -DMOACERT=... -DARGS=... -DEXPECT_RC=... -DEXPECT_TEXT=... -DOUT=...
#         -DWORKER_MARK="bad_worker.py MODE" -P worker_check.cmake
include(${CMAKE_CURRENT_LIST_DIR}/../plugins/plugin_check.cmake)
execute_process(COMMAND pgrep -f "${WORKER_MARK}$" RESULT_VARIABLE found OUTPUT_VARIABLE pids)
if(found EQUAL 0)
  message(FATAL_ERROR "a worker (${WORKER_MARK}) outlived moacert: ${pids}")
endif()
