// The umbrella header: everything wheeltimer offers. The oneTBB executor is included only when the
// library was built with oneTBB, which config.hpp announces by defining WHEELTIMER_HAS_TBB to 1.
#pragma once

#include <wheeltimer/config.hpp>

#include <wheeltimer/clock.hpp>
#include <wheeltimer/errors.hpp>
#include <wheeltimer/executor.hpp>
#include <wheeltimer/executors/caller_runs_pool.hpp>
#include <wheeltimer/executors/inline.hpp>
#include <wheeltimer/hashed_wheel_timer.hpp>
#include <wheeltimer/pending_task.hpp>
#include <wheeltimer/task.hpp>
#include <wheeltimer/timer.hpp>
#include <wheeltimer/timer_future.hpp>

#ifdef WHEELTIMER_HAS_TBB
#include <wheeltimer/executors/tbb_arena.hpp>
#endif
