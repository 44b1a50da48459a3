// The pool of records: taking free slots, claiming one for a schedule attempt, publishing it
// once accepted, and describing one in a violation.
#include "soak.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace soak {

// Producers take slots in batches and block while the pool is exhausted (the checker frees).
bool Soak::take_free(std::vector<std::uint32_t>& cache) {
  if (!cache.empty()) return true;
  std::unique_lock lock(free_mutex_);
  free_cv_.wait(lock, [&] { return !free_.empty() || stopping_.load(); });
  if (free_.empty()) return false;
  const std::size_t n = std::min<std::size_t>(kProducerBatch, free_.size());
  cache.assign(free_.end() - static_cast<std::ptrdiff_t>(n), free_.end());
  free_.resize(free_.size() - n);
  return true;
}

// Tasks never block for a slot: the rotator may be waiting for them inside stop().
std::optional<std::uint32_t> Soak::try_take_free() {
  std::lock_guard lock(free_mutex_);
  if (free_.empty()) return std::nullopt;
  const std::uint32_t slot = free_.back();
  free_.pop_back();
  return slot;
}

void Soak::give_back(std::span<const std::uint32_t> slots) {
  if (slots.empty()) return;
  {
    std::lock_guard lock(free_mutex_);
    free_.insert(free_.end(), slots.begin(), slots.end());
  }
  free_cv_.notify_all();
}

// FREE -> CLAIMED; returns the generation the task must carry.
std::uint32_t Soak::claim(std::uint32_t slot, Kind kind, std::uint32_t timer_id) {
  Record& r = records_[slot];
  const std::uint32_t gen = gen_of(r.word.load(std::memory_order_relaxed));
  r.runs.store(0, std::memory_order_relaxed);
  r.started.store(0, std::memory_order_relaxed);
  r.errors_reported.store(0, std::memory_order_relaxed);
  r.cancel_wins.store(0, std::memory_order_relaxed);
  r.kind = kind;
  r.param = 0;
  r.timer_id = timer_id;
  r.last_handoff = Handoff::none;
  r.handoffs = 0;
  r.flagged = false;
  r.lost = false;
  // Release: a task that runs before the record is LIVE (due now) sees the reset counters.
  r.word.store(make_word(gen, kClaimed), std::memory_order_release);
  return gen;
}

// CLAIMED -> LIVE if the schedule was accepted, else back to FREE (returns false; the caller
// recycles the slot). Wakes the rotator if it waits for this claim.
bool Soak::finish_claim(std::uint32_t slot, TimerFuture future) {
  Record& r = records_[slot];
  const std::uint32_t gen = gen_of(r.word.load(std::memory_order_relaxed));
  const bool accepted = future.valid();
  if (accepted) {
    r.future = std::move(future);
    r.word.store(make_word(gen, kLive), std::memory_order_release);  // publishes the fields
  } else {
    if (r.runs.load() != 0)
      violations_.add("a refused task ran (slot " + std::to_string(slot) + ")");
    r.word.store(make_word(gen + 1, kFree), std::memory_order_release);
  }
  r.word.notify_all();
  return accepted;
}

std::string Soak::describe(std::uint32_t slot, const Record& r) {
  const TaskState state = r.future.state();
  std::string out =
      "slot " + std::to_string(slot) + " gen " + std::to_string(gen_of(r.word.load())) + " kind " +
      kind_name(r.kind) + " timer " + std::to_string(r.timer_id) + " state " +
      std::string(wheeltimer::to_string(state)) + " runs " + std::to_string(r.runs.load()) +
      " cancel_wins " + std::to_string(r.cancel_wins.load()) + " on_error " +
      std::to_string(r.errors_reported.load()) + " handoffs " + std::to_string(r.handoffs) +
      " last_handoff " + handoff_name(r.last_handoff);
  const Clock::time_point deadline = r.future.deadline();
  char when[96] = " deadline never";
  if (deadline != kNever) {
    const int n =
        std::snprintf(when, sizeof when, " deadline %.3f ms from now", ms(deadline - Clock::now()));
    if (r.runs.load() != 0) {
      const Clock::time_point started{Clock::duration(r.started.load())};
      std::snprintf(when + n, sizeof when - n, ", started %.3f ms after it",
                    ms(started - deadline));
    }
  }
  out += when;
  return out;
}

// Reports at most one violation per record (the rest would repeat it).
void Soak::flag(std::uint32_t slot, Record& r, const std::string& what) {
  if (r.flagged) return;
  r.flagged = true;
  violations_.add(what + ": " + describe(slot, r));
}

}  // namespace soak
