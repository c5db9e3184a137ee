# Where an upstream stage's a priori bound is infinite, the allowance stays
# infinite (not NaN: 'bound -nan' failed any nonzero error) and certify says
# the rule is vacuous there: on the console, in the certificate's JSON and
# in its Markdown (issue #26 item 9g). The case: a block whose Wq and Wk
# are scaled by 2^60 (its attention's score bound overflows) and Wo = 0.
#   cmake -DMOACERT=... -DCASE=file.json -DOUT=dir -P vacuous_check.cmake
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND ${MOACERT} certify block --variant cpu.dnf --case ${CASE} --out ${OUT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "certify exited ${rc} (want 0, the rule vacuous):\n${out}${err}")
endif()
if(NOT out MATCHES "rule vacuous for y: 8 of 8 judged elements have an infinite bound")
  message(FATAL_ERROR "certify does not say the rule is vacuous:\n${out}")
endif()
file(READ ${OUT}/certificate.json json)
string(JSON unbounded GET "${json}" tensors y unbounded_elements)
if(NOT unbounded EQUAL 8)
  message(FATAL_ERROR "certificate.json: unbounded_elements ${unbounded}, want 8")
endif()
file(READ ${OUT}/certificate.md md)
if(NOT md MATCHES "The rule is vacuous for 8 of 8 judged elements of y")
  message(FATAL_ERROR "certificate.md does not say the rule is vacuous")
endif()
