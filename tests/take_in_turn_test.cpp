// take_in_turn() on its own: one node of each list in turn, at most `budget` (stopping partway
// through a turn if need be), what is left stays in the lists, and the callback may reuse a
// node's link.
#include <cstddef>
#include <vector>

#include <gtest/gtest.h>

#include "take_in_turn.hpp"

namespace wheeltimer::detail {
namespace {

struct Node {
  int id;
  Node* next = nullptr;
};

Node* next_of(const Node* node) { return node->next; }

// Lists of `lengths[i]` nodes each; list i holds ids 100*i, 100*i+1, ... from its front.
class Lists {
 public:
  explicit Lists(const std::vector<int>& lengths) : storage_(lengths.size()) {
    for (std::size_t list = 0; list < lengths.size(); ++list) {
      storage_[list].resize(static_cast<std::size_t>(lengths[list]));
      Node* previous = nullptr;
      for (int k = 0; k < lengths[list]; ++k) {
        Node& node = storage_[list][static_cast<std::size_t>(k)];
        node.id = 100 * static_cast<int>(list) + k;
        (previous == nullptr ? heads_.emplace_back() : previous->next) = &node;
        previous = &node;
      }
      if (previous == nullptr) heads_.push_back(nullptr);
    }
  }
  Lists(const Lists&) = delete;  // heads_ points into storage_
  Lists& operator=(const Lists&) = delete;

  Node** heads() { return heads_.data(); }
  std::size_t count() const { return heads_.size(); }

 private:
  std::vector<std::vector<Node>> storage_;
  std::vector<Node*> heads_;
};

std::vector<int> take(Lists& lists, std::size_t budget, std::size_t* taken = nullptr) {
  std::vector<int> ids;
  const std::size_t n = take_in_turn(lists.heads(), lists.count(), budget, next_of,
                                     [&](Node* node) { ids.push_back(node->id); });
  if (taken != nullptr) *taken = n;
  return ids;
}

TEST(TakeInTurnTest, TakesOneNodeOfEachListInTurnUntilAllAreEmpty) {
  Lists lists({3, 0, 1, 2});
  std::size_t taken = 0;
  EXPECT_EQ(take(lists, 100, &taken), (std::vector<int>{0, 200, 300, 1, 301, 2}));
  EXPECT_EQ(taken, 6u);
  for (std::size_t list = 0; list < lists.count(); ++list) {
    EXPECT_EQ(lists.heads()[list], nullptr) << "list " << list;
  }
}

TEST(TakeInTurnTest, StopsAtExactlyTheBudgetPartwayThroughATurnAndGoesOnFromThere) {
  Lists lists({3, 3, 3});
  std::size_t taken = 0;
  EXPECT_EQ(take(lists, 4, &taken), (std::vector<int>{0, 100, 200, 1}));
  EXPECT_EQ(taken, 4u);
  EXPECT_EQ(lists.heads()[0]->id, 2);
  EXPECT_EQ(lists.heads()[1]->id, 101);
  // The next call starts again at the first list, not where the last one stopped.
  EXPECT_EQ(take(lists, 3), (std::vector<int>{2, 101, 201}));
  EXPECT_EQ(take(lists, 100), (std::vector<int>{102, 202}));
}

TEST(TakeInTurnTest, ABudgetOfExactlyTheNodesLeftTakesThemAll) {
  Lists lists({2, 1});
  std::size_t taken = 0;
  EXPECT_EQ(take(lists, 3, &taken), (std::vector<int>{0, 100, 1}));
  EXPECT_EQ(taken, 3u);
  EXPECT_EQ(lists.heads()[0], nullptr);
  EXPECT_EQ(lists.heads()[1], nullptr);
}

TEST(TakeInTurnTest, ABudgetOfZeroOrNoNodesTakesNothing) {
  Lists full({2, 2});
  std::size_t taken = 1;
  EXPECT_TRUE(take(full, 0, &taken).empty());
  EXPECT_EQ(taken, 0u);
  EXPECT_EQ(full.heads()[0]->id, 0);
  Lists empty({0, 0, 0});
  taken = 1;
  EXPECT_TRUE(take(empty, 10, &taken).empty());
  EXPECT_EQ(taken, 0u);
}

TEST(TakeInTurnTest, TheCallbackMayRelinkTheNodeItIsGiven) {
  Lists lists({2, 2});
  Node* moved = nullptr;  // the taken nodes, pushed onto a list of their own through `next`
  take_in_turn(lists.heads(), lists.count(), 100, next_of, [&](Node* node) {
    node->next = moved;
    moved = node;
  });
  std::vector<int> ids;
  for (Node* node = moved; node != nullptr; node = node->next) ids.push_back(node->id);
  EXPECT_EQ(ids, (std::vector<int>{101, 1, 100, 0}));
}

}  // namespace
}  // namespace wheeltimer::detail
