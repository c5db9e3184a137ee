#include "properties/parallel_cases.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "properties/certify.hpp"

namespace moacert::properties {

std::unique_lock<std::mutex> generation_lock() {
  static std::mutex m;
  return std::unique_lock<std::mutex>(m);
}

int jobs_for(const kernels::Variant& v, int jobs) {
  return v.host_threads && !v.instrumentation ? std::max(jobs, 1) : 1;
}

Progress serialized(Progress progress) {
  if (!progress) return progress;
  auto m = std::make_shared<std::mutex>();
  return [m, progress = std::move(progress)](int done, int all, const char* phase) {
    const std::lock_guard<std::mutex> lock(*m);
    progress(done, all, phase);
  };
}

namespace {

// The cases in one thread, as certify always ran them: in order, the
// first failure ending the run.
std::vector<CaseRecord> one_at_a_time(const CaseRunner& runner, const Progress& progress) {
  std::vector<CaseRecord> records;
  for (int p = 0; p < runner.size(); ++p) {
    records.push_back(runner.run(p));
    if (!records.back().holds) break;
    if (progress) progress(p + 1, runner.size(), phase_of(records.back().kind));
  }
  return records;
}

// The shared state of the threads: the next position to take, the end
// that a failure (or an error) sets, and the records and errors by
// position.
class Pool {
 public:
  Pool(const CaseRunner& runner, const Progress& progress)
      : runner_(runner), progress_(progress), done_(std::size_t(runner.size())) {
    bound_ = runner.size();
  }

  // Takes positions until none is left below the bound.
  void work() {
    std::unique_lock<std::mutex> lock(m_);
    while (next_ < bound_) {
      const int p = next_++;
      lock.unlock();
      const bool solo = runner_.alone(p);  // drawn outside the pool's lock
      lock.lock();
      // A case that must run alone waits for the others to finish, and no
      // other starts while it waits or runs.
      if (solo) ++solo_waiting_;
      cv_.wait(lock, [&] { return !solo_running_ && (solo ? running_ == 0 : solo_waiting_ == 0); });
      if (solo) --solo_waiting_;
      if (p >= bound_) {  // a failure below it came in meanwhile
        cv_.notify_all();
        continue;
      }
      ++running_;
      solo_running_ = solo;
      lock.unlock();
      std::optional<CaseRecord> record;
      std::exception_ptr error;
      try {
        record = runner_.run(p);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      --running_;
      if (solo) solo_running_ = false;
      if (error || !record->holds) bound_ = std::min(bound_, p + 1);
      if (error) errors_.emplace(p, error);
      if (record) done_[std::size_t(p)] = std::move(record);
      report_in_order();
      cv_.notify_all();
    }
  }

  // The records up to and including the first failure, or the lowest
  // error's exception where it comes first.
  std::vector<CaseRecord> take() {
    std::vector<CaseRecord> records;
    for (int p = 0; p < runner_.size(); ++p) {
      if (!errors_.empty() && errors_.begin()->first == p)
        std::rethrow_exception(errors_.begin()->second);
      if (!done_[std::size_t(p)]) break;  // past the first failure
      records.push_back(std::move(*done_[std::size_t(p)]));
      if (!records.back().holds) break;
    }
    return records;
  }

 private:
  // Progress for each holding case whose predecessors are all done, as one
  // thread reports it.
  void report_in_order() {
    while (reported_ < bound_ && done_[std::size_t(reported_)]) {
      const CaseRecord& r = *done_[std::size_t(reported_)];
      ++reported_;
      if (r.holds && progress_) progress_(reported_, runner_.size(), phase_of(r.kind));
    }
  }

  const CaseRunner& runner_;
  const Progress& progress_;
  std::mutex m_;
  std::condition_variable cv_;
  int next_ = 0, bound_ = 0, running_ = 0, solo_waiting_ = 0, reported_ = 0;
  bool solo_running_ = false;
  std::vector<std::optional<CaseRecord>> done_;
  std::map<int, std::exception_ptr> errors_;
};

}  // namespace

std::vector<CaseRecord> run_cases(const CaseRunner& runner, int jobs, const Progress& progress) {
  if (jobs <= 1 || runner.size() <= 1) return one_at_a_time(runner, progress);
  Pool pool(runner, progress);
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min(jobs, runner.size()); ++t)
    threads.emplace_back([&] { pool.work(); });
  for (std::thread& t : threads) t.join();
  return pool.take();
}

}  // namespace moacert::properties
