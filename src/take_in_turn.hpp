// take_in_turn: empties several singly linked lists side by side.
//
// Walking one linked list is a chain of cache misses, each waiting for the one before it. Walking
// several at once, one node of each list in turn while the next node of each is prefetched,
// overlaps those misses. The wheel walks its slots' lists this way, and the indicator the lists
// of canceled nodes.
//
// Threads: the caller must own the lists; no synchronisation.
#pragma once

#include <cstddef>

namespace wheeltimer::detail {

// Takes nodes off the fronts of `lists[0..count)`, one node of each non-empty list in turn, and
// passes each to `each`, until the lists are empty or exactly `budget` nodes were taken. `next`
// reads a node's link; it is read before `each` sees the node, so `each` may reuse the link.
// The heads left in `lists` are what remains. Returns how many nodes it took.
template <class Node, class Next, class Each>
std::size_t take_in_turn(Node** lists, std::size_t count, std::size_t budget, Next&& next,
                         Each&& each) {
  std::size_t taken = 0;
  for (bool any = true; any;) {
    any = false;
    for (std::size_t list = 0; list < count; ++list) {
      Node* const node = lists[list];
      if (node == nullptr) continue;
      if (taken == budget) return taken;
      any = true;
      lists[list] = next(node);
      // This list's next node is needed only after every other list's turn: ask for it now.
      if (lists[list] != nullptr) __builtin_prefetch(lists[list], 1);
      each(node);
      ++taken;
    }
  }
  return taken;
}

}  // namespace wheeltimer::detail
