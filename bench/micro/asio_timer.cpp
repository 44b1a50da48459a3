#include "asio_timer.hpp"

namespace micro {

AsioTimer::AsioTimer() : work_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {}

AsioTimer::~AsioTimer() {
  work_.reset();
  io_.stop();  // pending far-future waits would otherwise keep run() going
  thread_.join();
}

}  // namespace micro
