// certify's cases judged several at a time (certify --jobs; docs/design.md,
// "Jobs"): each case is self-contained (CaseRunner::run), so threads take
// the positions in turn and the certificate is the reduction of the same
// records in case order, field for field that of one job (times aside).
#pragma once

#include <functional>
#include <mutex>
#include <vector>

#include "kernels/registry.hpp"
#include "properties/case_record.hpp"

namespace moacert::properties {

class CaseRunner;

// certify's progress report: (cases done, cases in all, phase).
using Progress = std::function<void(int, int, const char*)>;

// `progress` called by one thread at a time (empty stays empty): the
// cases report from every job, a shrinking case among them.
Progress serialized(Progress progress);

// RapidCheck keeps its generators' implicit parameters in process-wide
// stacks (rc::detail::ImplicitParam): two threads drawing, evaluating or
// shrinking a case at once would corrupt each other's draws. Every draw,
// value and shrink step of certify's cases holds this lock, so that
// generation and shrinking stay sequential and each case's draw the same
// (a function of the seed and its index alone); the judging (oracle,
// kernel, PyTorch beside) runs outside it.
std::unique_lock<std::mutex> generation_lock();

// The jobs a variant's cases may be judged in at once in this process:
// `jobs` for a kernel that runs in this process and keeps nothing between
// calls (Variant::host_threads, nothing counted), else 1: the SIMT emulator's
// counters and schedule seed are the variant's (kernels::Instrumentation),
// a plugin's or worker's process serves one call at a time, a CUDA device
// is one, and LibTorch's thread count, which PyTorch's determinism check
// sets to 1 and 2, is the process's (its equivalence runs beside a CPU
// variant's cases leave it as it is).
int jobs_for(const kernels::Variant& v, int jobs);

// The records of `runner`'s cases, judged `jobs` at a time (jobs_for), up
// to and including the first that fails, in position order: what
// certify() reduces. A case that `alone` (CaseRunner::alone) marks runs
// with no other beside it. `progress` (cases done, in all, phase) is
// called in position order, from one thread at a time. An exception from
// a case below the first failure is rethrown, the lowest position's.
std::vector<CaseRecord> run_cases(const CaseRunner& runner, int jobs, const Progress& progress);

}  // namespace moacert::properties
