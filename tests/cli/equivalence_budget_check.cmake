# PyTorch's equivalence report within --max-memory (docs/design.md,
# "Memory budget"): attention.fwd at N = M = 4096 with D = 16 and cpu.flash
# needs 36 MiB, and 213 MiB with PyTorch beside it (its 4096 x 4096 S, P
# and logsumexp's shifted copy of S, which outweigh the sampled oracle).
# Under 100M every case is judged and none has the report, where refusing
# the whole certify for a report would deny the certificate; under 300M
# every case has it.
#   cmake -DMOACERT=... -DOUT=dir -P equivalence_budget_check.cmake
include(${CMAKE_CURRENT_LIST_DIR}/certify_json.cmake)

# Certifies VARIANT of OP at SHAPE under --max-memory MAX into OUT/NAME and
# sets `cases` (judged) and `compared` (with PyTorch's report) in the
# caller.
function(certify_counting_reports name op variant shape max)
  certify_expecting_success("${op} --max-memory ${max}" ${OUT}/${name} ${op} --variant ${variant}
                            --shape ${shape} --cases 1 --seed 1 --max-memory ${max})
  string(JSON curated GET "${json}" cases curated)
  string(JSON random GET "${json}" cases random)
  math(EXPR judged "${curated} + ${random}")
  string(JSON reports ERROR_VARIABLE missing GET "${json}" vs_torch cases)
  if(missing)  # vs_torch is null: no case had the report
    set(reports 0)
  endif()
  set(cases ${judged} PARENT_SCOPE)
  set(compared ${reports} PARENT_SCOPE)
endfunction()

foreach(max 100M 300M)
  certify_counting_reports(${max} attention.fwd cpu.flash B=1,H=1,Hkv=1,N=4096,M=4096,D=16 ${max})
  if(max STREQUAL "100M" AND NOT compared EQUAL 0)
    message(FATAL_ERROR "--max-memory 100M: PyTorch ran beside on ${compared} cases, over the budget")
  endif()
  if(max STREQUAL "300M" AND NOT compared EQUAL cases)
    message(FATAL_ERROR "--max-memory 300M: the report on ${compared} of ${cases} cases")
  endif()
  message(STATUS "--max-memory ${max}: ${cases} cases judged, ${compared} with PyTorch's report")
endforeach()

# The oracle and the kernels are two phases, the larger counting, not their
# sum (docs/design.md, "Memory budget"): attention.bwd at N = M = 1024 with
# two heads of 16 needs 76.6 MiB with PyTorch beside (tensors 4.6 + max(the
# oracle's 72.0, PyTorch's 32.0 MiB of scores + the answer's 3.4)), where
# the sum would be 108.6 MiB. Under 90M every case has the report.
certify_counting_reports(bwd_90M attention.bwd cpu.flash_bwd B=1,H=2,Hkv=2,N=1024,M=1024,D=16 90M)
if(NOT compared EQUAL cases)
  message(FATAL_ERROR "attention.bwd --max-memory 90M: the report on ${compared} of ${cases} "
                      "cases; the phases fit with PyTorch beside")
endif()
message(STATUS "attention.bwd --max-memory 90M: ${cases} cases, each with PyTorch's report")
