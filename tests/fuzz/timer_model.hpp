// A reference model of a timer, and a checker that runs the real thing beside it.
//
// check_against_model() decodes bytes into a sequence of operations on up to two timers that
// share one ManualClock and one executor: schedule (with a delay of a few ticks or up to 2^23
// ticks, so tasks land on upper levels and cascade; due now, in the past or saturated; some tasks
// throw), cancel, advance the clock (a few ticks, or a jump across many cascades), stop, adopt a
// handed-back task into a timer, run it directly, or drop it. One of the executors is held by the
// model: it keeps due tasks queued until the model releases them, or refuses them (after dropping,
// keeping or running them), as the model says. After every step it compares the timers with the
// model: which tasks ran, when (never before their deadline, and exactly at the first clock reading
// at or after it, which also checks that a task due before the indicator's planned wake-up woke
// it), every future's state and exception, each timer's pending(), and how often on_error was told.
//
// The libFuzzer target (fuzz_target.cpp) and the replay test (replay_test.cpp) both call it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace wheeltimer::fuzz {

// Runs the operations `data` encodes; returns "" if the timers agreed with the model throughout,
// otherwise a description of the first disagreement.
std::string check_against_model(const std::uint8_t* data, std::size_t size);

}  // namespace wheeltimer::fuzz
