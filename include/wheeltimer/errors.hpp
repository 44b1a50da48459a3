// The exceptions a timer throws for requests it refuses. Bad arguments are std::invalid_argument
// and calling stop() from one of the timer's own tasks is std::logic_error; these two name the
// refusals that depend on the timer's state rather than on the arguments.
#pragma once

#include <stdexcept>

#include <wheeltimer/config.hpp>

namespace wheeltimer {

// schedule(), schedule_at() or adopt() would exceed TimerOptions::max_pending.
class WHEELTIMER_API Rejected : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// schedule(), schedule_at() or adopt() after stop() has begun.
class WHEELTIMER_API Stopped : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace wheeltimer
