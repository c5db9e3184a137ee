# Random cases past --max-memory are drawn but never started (docs/design.md,
# "Memory budget"): the deployment-scale draws of the backward ops need some
# 12 GiB at their largest, and refusing the whole certify for them would
# deny the default run on a 24 GiB machine. attention.fwd with cpu.flash,
# 30 cases of seed 1: its curated cases fit 20 MiB, some of its random ones
# do not. The run holds, says how many it left out, and counts them as
# discarded; the others are judged.
#   cmake -DMOACERT=... -DOUT=dir -P discard_budget_check.cmake
include(${CMAKE_CURRENT_LIST_DIR}/certify_json.cmake)
certify_expecting_success("cases past the budget are left out" ${OUT}
                          attention.fwd --variant cpu.flash --cases 30 --seed 1 --max-memory 20M)
string(JSON discarded GET "${json}" cases discarded)
string(JSON random GET "${json}" cases random)
math(EXPR drawn "${discarded} + ${random}")
if(discarded LESS 1 OR NOT drawn EQUAL 30)
  message(FATAL_ERROR "${discarded} discarded and ${random} random cases judged, of 30 drawn")
endif()
if(NOT out MATCHES "cpu.flash: ${discarded} of 30 random cases need more than --max-memory 20.0 MiB: not run")
  message(FATAL_ERROR "no line naming the ${discarded} cases left out: ${out}")
endif()
message(STATUS "${discarded} of 30 random cases past 20 MiB, ${random} judged")
