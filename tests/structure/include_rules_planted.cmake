# The include-rule checker catches planted violations: a copy of reports/
# with `#include "kernels/registry.hpp"` added to one file and
# `#include "properties/certify.hpp"` (the property engine) to another must
# fail, naming each file and line.
#   cmake -DPYTHON=... -DCHECKER=include_rules.py -DSOURCE=<repo> -DWORK=<dir> -P this
file(REMOVE_RECURSE "${WORK}")
file(COPY "${SOURCE}/reports" DESTINATION "${WORK}")
file(READ "${WORK}/reports/certificate.cpp" text)
file(WRITE "${WORK}/reports/certificate.cpp" "#include \"kernels/registry.hpp\"\n${text}")
file(READ "${WORK}/reports/html.cpp" text)
file(WRITE "${WORK}/reports/html.cpp" "#include \"properties/certify.hpp\"\n${text}")
execute_process(COMMAND "${PYTHON}" "${CHECKER}" "${WORK}" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 1)
  message(FATAL_ERROR "the planted include was not caught (exit ${rc}):\n${out}")
endif()
if(NOT out MATCHES "reports/certificate.cpp:1: includes \"kernels/registry.hpp\": reports/ reads results")
  message(FATAL_ERROR "the violation is not named by file, line and rule:\n${out}")
endif()
if(NOT out MATCHES "reports/html.cpp:1: includes \"properties/certify.hpp\": reports/ reads results")
  message(FATAL_ERROR "the property engine included from reports/ is not caught:\n${out}")
endif()
message(STATUS "caught: ${out}")
