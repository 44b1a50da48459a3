// The wheel and the due queue driven as the indicator drives them, round after round, with
// deadlines and clock readings anywhere in the 64-bit range: wheel sizes 1 to 2^17 slots, ticks of
// 1 ns to 2^62 ns, a clock that starts at its epoch, a day later or 2^62 ns later. Each round runs
// the wheel the lookahead ahead of now, finishes the cascades due by the next tick, takes what is
// due, and then either works a chunk of a cascade (the clock moving on meanwhile) or computes when
// the indicator would wake up (next_wake(), the indicator's own function), and moves the clock:
// to that wake-up, not at all, a few ticks, up to 2^40 ns, or anywhere.
// Checked in every round: nothing is taken early; after a round, nothing due by now is left;
// the wake-up is after now (no spin) and no later than the earliest deadline held (no oversleep);
// and at the end every task that was not taken is still held (nothing lost, nothing twice).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "due_queue.hpp"
#include "indicator_steps.hpp"
#include "lent_nodes.hpp"
#include "wheel.hpp"

namespace wheeltimer::detail {
namespace {

using Duration = Clock::duration;
using TimePoint = Clock::time_point;

constexpr int kRounds = 3000;

struct Shape {
  std::size_t slots;
  Duration tick;
  TimePoint start;
};

std::vector<Shape> shapes() {
  std::vector<Shape> all;
  for (std::size_t slots : {1u, 2u, 4u, 8u, 16u, 64u, 512u, 1u << 16, 1u << 17}) {
    for (Duration tick : {Duration(1), Duration(7), Duration(std::chrono::microseconds(1)),
                          Duration(std::chrono::milliseconds(1)),
                          Duration(std::chrono::milliseconds(3)), Duration(std::chrono::hours(1)),
                          Duration(std::int64_t{1} << 40), Duration(std::int64_t{1} << 62)}) {
      for (TimePoint start : {TimePoint(), TimePoint(std::chrono::hours(24)),
                              TimePoint(Duration(std::int64_t{1} << 62))}) {
        all.push_back({slots, tick, start});
      }
    }
  }
  return all;
}

std::string name_of(const ::testing::TestParamInfo<Shape>& info) {
  return std::to_string(info.param.slots) + "slots_tick" + std::to_string(info.param.tick.count()) +
         "ns_start" + std::to_string(info.param.start.time_since_epoch().count()) + "ns";
}

// `now` + `offset`, or the last time point before max() (max() itself means "never").
TimePoint capped_add(TimePoint now, Duration offset) {
  const TimePoint sum = saturating_add(now, offset);
  return sum == TimePoint::max() ? TimePoint::max() - Duration(1) : sum;
}

class WheelRangeTest : public ::testing::TestWithParam<Shape> {
 protected:
  WheelRangeTest()
      : shape_(GetParam()),
        lookahead_(std::max<std::uint64_t>(
            1, static_cast<std::uint64_t>(std::chrono::milliseconds(64) / shape_.tick))),
        random_(shape_.slots * 31 + static_cast<std::uint64_t>(shape_.tick.count()) +
                static_cast<std::uint64_t>(shape_.start.time_since_epoch().count())),
        nodes_(shape_.start),
        wheel_(shape_.slots, shape_.start, shape_.tick),
        due_(wheel_, lookahead_) {}

  std::uint64_t below(std::uint64_t bound) { return bound == 0 ? 0 : random_() % bound; }
  // A random duration below `bound` nanoseconds (at most Duration::max()).
  Duration shorter_than(std::uint64_t bound) {
    constexpr auto kLongest = static_cast<std::uint64_t>(Duration::max().count());
    return Duration(static_cast<Duration::rep>(std::min(below(bound), kLongest)));
  }
  // `ticks` times `tick`, or `cap` if that is less or the product overflows.
  static std::uint64_t up_to(std::uint64_t tick, std::uint64_t ticks, std::uint64_t cap) {
    return tick > cap / ticks ? cap : tick * ticks;
  }

  // How far after `now_` a new task is due: a few ns, a few ticks, anything up to the end of
  // time, a power of two, the end of time itself, or (1 ns around) a slot boundary of some level
  // a few rotations ahead.
  Duration random_offset() {
    const auto headroom = static_cast<std::uint64_t>((TimePoint::max() - now_).count());
    const auto tick = static_cast<std::uint64_t>(shape_.tick.count());
    switch (random_() % 7) {
      case 0: return Duration(static_cast<Duration::rep>(below(1000)));
      case 1: return Duration(static_cast<Duration::rep>(below(up_to(tick, 100, headroom))));
      case 2: return Duration(static_cast<Duration::rep>(below(headroom)));
      case 3: {
        const std::uint64_t bit = std::uint64_t{1} << below(63);
        return Duration(static_cast<Duration::rep>(std::min(bit + below(bit), headroom)));
      }
      case 4: return Duration(static_cast<Duration::rep>(headroom - below(1000)));
      default: {
        const std::uint64_t unit = std::uint64_t{1} << below(40);
        const std::uint64_t tick_now = wheel_.tick_of(now_);
        if (tick_now > (Wheel::kNever - 1) / unit - 4) return Duration(0);
        const TimePoint boundary = wheel_.tick_time((tick_now / unit + 1 + below(3)) * unit);
        const Duration jitter(static_cast<Duration::rep>(below(3)) - 1);
        return boundary == TimePoint::max() ? Duration(0)
                                            : std::max(Duration(0), boundary - now_ + jitter);
      }
    }
  }

  void schedule_some() {
    for (std::uint64_t k = below(12); k > 0; --k) {
      TimePoint deadline = capped_add(now_, random_offset());
      if (below(50) == 0) deadline = now_ - Duration(static_cast<Duration::rep>(below(1'000'000)));
      deadline = std::max(deadline, shape_.start);  // LentNodes counts from the start
      TaskNode* node = nodes_.at(deadline - shape_.start);
      held_.insert({node->deadline(), node});
      if (!wheel_.insert(node)) due_.push(node);
    }
  }

  // One round of the indicator at `now_`; true if it would go on to sleep.
  bool indicator_round() {
    const auto to_due = [this](TaskNode* node) { due_.push(node); };
    const std::uint64_t tick = wheel_.tick_of(now_);
    if (tick != Wheel::kNever) {
      wheel_.advance_to(saturating_tick_add(tick, lookahead_), to_due);
      wheel_.finish_cascades_by(tick + 1, to_due);
    }
    while (TaskNode* node = due_.pop_due(now_)) {
      EXPECT_LE(node->deadline(), now_) << "taken early";
      EXPECT_EQ(held_.erase({node->deadline(), node}), 1u) << "taken twice";
    }
    if (!held_.empty()) {
      EXPECT_GT(held_.begin()->first, now_) << "due by now and left behind";
    }
    if (wheel_.cascading()) {
      wheel_.cascade_some(1 + below(64), to_due);
      return false;
    }
    return true;
  }

  // The indicator's wake-up, checked against what is held.
  TimePoint checked_wake() {
    const TimePoint wake = next_wake(wheel_, due_, lookahead_);
    EXPECT_GT(wake, now_) << "the indicator would spin";
    const auto first = std::find_if(held_.begin(), held_.end(), [](const auto& entry) {
      return entry.first != TimePoint::max();
    });
    if (first != held_.end()) {
      EXPECT_LE(wake, first->first) << "the indicator would oversleep";
    }
    return wake;
  }

  void move_clock(TimePoint wake) {
    const std::uint64_t draw = below(100);
    const auto tick = static_cast<std::uint64_t>(shape_.tick.count());
    TimePoint next = now_;
    if (draw < 40) {
      if (wake != TimePoint::max()) next = wake;
    } else if (draw < 55) {
      next = now_;
    } else if (draw < 85) {
      next = capped_add(now_, shorter_than(up_to(tick, 3, UINT64_MAX - 1) + 1));
    } else if (draw < 99) {
      next = capped_add(now_, shorter_than(std::uint64_t{1} << below(40)));
    } else {
      next = capped_add(now_, random_offset());
    }
    now_ = std::max(now_, next);
  }

  const Shape shape_;
  const std::uint64_t lookahead_;
  std::mt19937_64 random_;
  LentNodes nodes_;
  Wheel wheel_;
  DueQueue due_;
  TimePoint now_ = shape_.start;
  std::set<std::pair<TimePoint, TaskNode*>> held_;  // scheduled and not yet taken
};

TEST_P(WheelRangeTest, NeverEarlyNothingLeftBehindNoSpinNoOversleepNothingLost) {
  for (int round = 0; round < kRounds && !HasFailure(); ++round) {
    schedule_some();
    if (indicator_round()) {
      move_clock(checked_wake());
    } else if (below(4) == 0) {  // the clock moves on while the indicator works through a cascade
      const auto tick = static_cast<std::uint64_t>(shape_.tick.count());
      now_ = capped_add(now_, shorter_than(up_to(tick, 2, UINT64_MAX - 1) + 1));
    }
  }
  std::size_t left = 0;
  wheel_.drain([&](TaskNode*) { ++left; });
  due_.drain([&](TaskNode*) { ++left; });
  EXPECT_EQ(left, held_.size());
}

INSTANTIATE_TEST_SUITE_P(SizesTicksStarts, WheelRangeTest, ::testing::ValuesIn(shapes()), name_of);

}  // namespace
}  // namespace wheeltimer::detail
