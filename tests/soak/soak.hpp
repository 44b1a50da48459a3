// wheeltimer-soak's driver: the threads, the checks and the report, one object per run. Its
// member functions are defined by theme in soak.cpp, soak_records.cpp, soak_workers.cpp,
// soak_checks.cpp and soak_report.cpp.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "soak_types.hpp"

namespace soak {

class Soak {
 public:
  explicit Soak(const Options& options) : options_(options) {
    free_.reserve(kPoolSize);
    for (std::uint32_t slot = kPoolSize; slot-- > 0;) free_.push_back(slot);
  }
  int run();

 private:
  // 32 bytes and nothrow-movable, so wheeltimer::Task stores it without a heap allocation.
  struct SoakTask {
    Soak* soak;
    std::uint32_t slot;
    std::uint32_t gen;
    std::shared_ptr<TimerBox> own;  // only for tasks that schedule on their own timer
    void operator()() { soak->run_task(slot, gen, own.get()); }
  };

  // --- timers
  std::shared_ptr<TimerBox> make_timer(std::size_t index);
  std::array<std::shared_ptr<TimerBox>, kLiveTimers> live_timers();
  std::vector<PendingTask> stop_and_check(TimerBox& box);

  // --- records
  std::mutex& stripe(std::uint32_t slot) { return stripes_[slot % stripes_.size()]; }
  bool take_free(std::vector<std::uint32_t>& cache);
  std::optional<std::uint32_t> try_take_free();
  void give_back(std::span<const std::uint32_t> slots);
  std::uint32_t claim(std::uint32_t slot, Kind kind, std::uint32_t timer_id);
  bool finish_claim(std::uint32_t slot, TimerFuture future);
  std::string describe(std::uint32_t slot, const Record& r);
  void flag(std::uint32_t slot, Record& r, const std::string& what);

  // --- schedule attempts, which note the deadline's bounds in the record
  template <class Delay>
  TimerFuture schedule_after(Record& r, TimerBox& box, SoakTask task, Delay delay);
  TimerFuture schedule_at(Record& r, TimerBox& box, SoakTask task, Clock::time_point deadline);
  template <class Schedule>
  TimerFuture attempt(Schedule&& schedule);

  // --- threads
  void produce(unsigned index);
  void cancel_randomly(unsigned index);
  void rotate();
  void check_periodically();
  bool pace(Clock::duration period);  // false once stopping

  // --- what tasks, on_error and the checks do
  void run_task(std::uint32_t slot, std::uint32_t gen, TimerBox* own);
  void spawn_child(TimerBox& own, std::uint32_t delay_ms, bool cancel_at_once);
  void on_error(std::exception_ptr error);
  void wait_for_claims();
  void hand_off(TimerBox& stopped, std::vector<PendingTask> tasks,
                std::span<const std::shared_ptr<TimerBox>> targets, Rng& rng);
  void check_pass(bool final);
  void settle(std::uint32_t slot, Record& r, TaskState state);
  void shut_down();

  // --- output
  void progress(Clock::time_point start, bool tty, bool final_line);
  void report(Clock::duration elapsed, std::uint64_t violations);

  const Options options_;
  std::unique_ptr<Record[]> records_ = std::make_unique<Record[]>(kPoolSize);
  std::array<std::mutex, 64> stripes_;

  std::mutex free_mutex_;
  std::condition_variable free_cv_;
  std::vector<std::uint32_t> free_;  // guarded by free_mutex_

  std::mutex timers_mutex_;
  std::array<std::shared_ptr<TimerBox>, kLiveTimers> timers_;  // guarded by timers_mutex_
  std::atomic<std::uint64_t> timers_version_{0};               // bumped on every replacement
  std::vector<std::shared_ptr<TimerBox>> graveyard_;  // stopped timers tasks may still capture
  std::atomic<std::uint32_t> next_timer_id_{0};
  std::array<std::string, kLiveTimers> executor_names_;

  std::mutex handoff_mutex_;  // the rotator's hand-off vs the checker's settling
  Outcomes outcomes_;         // guarded by handoff_mutex_

  // Producers grant cancels; cancellers take them, so cancelling keeps pace with scheduling.
  std::atomic<std::int32_t> cancel_budget_{0};  // futex-sized for wait()

  std::mutex pace_mutex_;
  std::condition_variable pace_cv_;
  std::atomic<bool> stopping_{false};

  Ops ops_;
  Violations violations_;
  std::uint64_t last_progress_accepted_ = 0, last_progress_cancels_ = 0;
  Clock::time_point last_progress_{};
};

}  // namespace soak
