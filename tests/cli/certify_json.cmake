# Runs `moacert certify ARGN --out DIR` (DIR emptied first), fails the test
# unless it exits 0, and sets `json` (DIR/certificate.json) and `out` (what
# it printed) in the caller. WHAT names the run in the failure.
#   include(certify_json.cmake) from a script run with -DMOACERT=...
function(certify_expecting_success what dir)
  file(REMOVE_RECURSE "${dir}")
  execute_process(COMMAND ${MOACERT} certify ${ARGN} --out ${dir}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: certify exited ${rc}: ${stdout}${err}")
  endif()
  file(READ "${dir}/certificate.json" certificate)
  set(json "${certificate}" PARENT_SCOPE)
  set(out "${stdout}" PARENT_SCOPE)
endfunction()
