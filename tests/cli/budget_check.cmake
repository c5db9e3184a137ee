# certify's memory budget at a sampled shape, from the figure it states:
#   cmake -DMOACERT=... -DARGS="certify|OP|...|--cases|1" -DFIRST_MAX=SIZE -DUNWRITABLE=PATH
#         -P budget_check.cmake
# 1. --max-memory FIRST_MAX (above the tensors, below the whole need; the
#    tensors past the budget are refused before the oracle's part is
#    counted): refused (exit 2) with "needs X GiB (tensors A + max(oracle B
#    ...)";
# 2. --max-memory X + 0.2 GiB: passes the budget, refused at --out UNWRITABLE;
# 3. --max-memory X - 0.2 GiB: refused, naming the same X.
string(REPLACE "|" ";" args "${ARGS}")
function(run_certify max out_var rc_var)
  execute_process(COMMAND ${MOACERT} ${args} --max-memory ${max} --out ${UNWRITABLE}
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
  set(${out_var} "${err}" PARENT_SCOPE)
  set(${rc_var} "${rc}" PARENT_SCOPE)
endfunction()

run_certify(${FIRST_MAX} err rc)
if(NOT rc EQUAL 2 OR NOT err MATCHES "needs ([0-9.]+) GiB \\(tensors [0-9.]+ [GMK]iB \\+ max\\(oracle [0-9.]+ [GMK]iB")
  message(FATAL_ERROR "--max-memory ${FIRST_MAX}: expected a refusal stating GiB, got exit ${rc}: ${err}")
endif()
set(need ${CMAKE_MATCH_1})
string(REGEX REPLACE "\\..*" "" whole_gib "${need}")
string(REGEX REPLACE ".*\\." "" tenth "${need}")
math(EXPR need_mib "${whole_gib} * 1024 + ${tenth} * 1024 / 10")
math(EXPR above "${need_mib} + 205")
math(EXPR below "${need_mib} - 205")

run_certify(${above}M err rc)
if(NOT rc EQUAL 2 OR NOT err MATCHES "cannot create output folder")
  message(FATAL_ERROR "--max-memory ${above}M (the stated ${need} GiB + 0.2): expected the budget "
                      "to pass and the output folder to be refused, got exit ${rc}: ${err}")
endif()
run_certify(${below}M err rc)
if(NOT rc EQUAL 2 OR NOT err MATCHES "needs ${need} GiB .*over --max-memory")
  message(FATAL_ERROR "--max-memory ${below}M (the stated ${need} GiB - 0.2): expected the "
                      "refusal naming ${need} GiB, got exit ${rc}: ${err}")
endif()
message(STATUS "sampled budget: needs ${need} GiB; ${above} MiB passes, ${below} MiB refused")
