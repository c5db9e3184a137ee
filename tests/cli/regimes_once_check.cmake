# certify of every variant of an op names the regimes no case reached once
# for the op, after every verdict, not once per variant (issue #26 item 9k);
# then, last, the envelope thresholds no case crossed (issue #29 item 4;
# seed 1's cases leave D 16384 uncrossed for every variant), one line per
# set of variants: from generation 8 simt.rmsnorm's differs, its rows T
# drawn within its reach of 4096 (docs/design.md#envelope), whose
# thresholds past it are not its own.
#   cmake -DMOACERT=... -DOUT=dir -P regimes_once_check.cmake
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND ${MOACERT} certify rmsnorm --cases 2 --seed 1 --out ${OUT}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "certify exited ${rc}: ${out}${err}")
endif()
string(REGEX MATCHALL "rmsnorm [^ ]+ f32: holds" verdicts "${out}")
list(LENGTH verdicts n_verdicts)
string(REGEX MATCHALL "regimes not reached in this run" lines "${out}")
list(LENGTH lines n_lines)
string(REGEX MATCHALL "envelope thresholds no case crossed" envelope "${out}")
list(LENGTH envelope n_envelope)
if(n_verdicts LESS 2 OR NOT n_lines EQUAL 1 OR n_envelope LESS 1)
  message(FATAL_ERROR "${n_verdicts} verdicts, ${n_lines} 'regimes not reached' lines, "
    "${n_envelope} 'envelope thresholds' lines (want 1, and 1 or more):\n${out}")
endif()
if(NOT out MATCHES
   "holds[^\n]*\n(.*\n)?regimes not reached in this run: [^\n]+\n(envelope thresholds no case crossed[^\n]*: [^\n]+\n)+$")
  message(FATAL_ERROR "not the regimes line after every verdict, then the envelope line, last:\n${out}")
endif()
