#include <wheeltimer/executors/inline.hpp>

#include <stdexcept>

namespace wheeltimer {

void InlineExecutor::execute(Task work) {
  if (!work) {
    throw std::invalid_argument("wheeltimer: InlineExecutor::execute() was given an empty task");
  }
  work();
}

}  // namespace wheeltimer
