// Task: a move-only, type-erased `void()` callable, the unit of work every wheeltimer API takes.
//
// Any callable converts to a Task implicitly, copyable or move-only (a lambda capturing a
// std::unique_ptr or a std::promise works). Captures of up to `inline_capacity` bytes live inside
// the Task itself, so wrapping them allocates nothing; larger ones are moved to the heap once. So
// are the rare small ones whose move may throw (a Task's move is noexcept, as std::function's
// and std::move_only_function's are for what they store inline) or that are aligned beyond
// std::max_align_t. A null function pointer or an empty std::function gives an empty Task.
//
// A Task is a plain value: one thread at a time may use a given Task; distinct Tasks are
// independent.
#pragma once

#include <cstddef>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

namespace wheeltimer {
namespace detail {
class TaskNode;
}  // namespace detail

class Task {
 public:
  // Captures up to this size and alignment are stored without a heap allocation (see above for
  // the exceptions).
  static constexpr std::size_t inline_capacity = 32;
  static constexpr std::size_t inline_alignment = alignof(std::max_align_t);

  Task() noexcept = default;
  Task(std::nullptr_t) noexcept {}  // NOLINT(google-explicit-constructor): mirrors std::function

  // Implicit, so that `schedule([]{...}, 10ms)` compiles.
  template <class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, Task> &&
             std::is_invocable_v<std::decay_t<F>&> &&
             std::is_constructible_v<std::decay_t<F>, F>)
  Task(F&& callable) {  // NOLINT(google-explicit-constructor)
    using Callable = std::decay_t<F>;
    if (is_null(callable)) return;
    if constexpr (fits_inline<Callable>) {
      ::new (static_cast<void*>(storage_)) Callable(std::forward<F>(callable));
      ops_ = &inline_ops<Callable>;
    } else {
      ::new (static_cast<void*>(storage_)) Callable*(new Callable(std::forward<F>(callable)));
      ops_ = &heap_ops<Callable>;
    }
  }

  Task(Task&& other) noexcept { take(other); }
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  // Runs the callable. An empty Task throws std::bad_function_call.
  void operator()() {
    if (ops_ == nullptr) throw std::bad_function_call();
    ops_->invoke(storage_);
  }

  explicit operator bool() const noexcept { return ops_ != nullptr; }

  // True when the callable lives inside this Task (no heap allocation was made for it).
  bool stored_inline() const noexcept { return ops_ != nullptr && ops_->inline_storage; }

  // Destroys the callable (and so its captures) now; the Task becomes empty.
  void reset() noexcept {
    if (ops_ != nullptr) {
      ops_->destroy(storage_);
      ops_ = nullptr;
    }
  }

 private:
  // A scheduled task's node moves the callable out of the Task into storage of its own, sized to
  // Ops::size, so a small capture does not pay for the whole inline buffer while it waits.
  friend class detail::TaskNode;

  struct Ops {
    void (*invoke)(void* storage);
    void (*relocate)(void* from, void* to) noexcept;  // move-construct into `to`, destroy `from`
    void (*destroy)(void* storage) noexcept;
    std::size_t size;  // bytes it occupies in storage: its sizeof, a multiple of its alignment
    bool inline_storage;
    bool trivially_destructible;  // stored inline and destroy() does nothing
  };

  template <class C>
  static constexpr bool fits_inline = sizeof(C) <= inline_capacity &&
                                      alignof(C) <= inline_alignment &&
                                      std::is_nothrow_move_constructible_v<C>;

  template <class C>
  static constexpr Ops inline_ops{
      [](void* s) { (*static_cast<C*>(s))(); },
      [](void* from, void* to) noexcept {
        ::new (to) C(std::move(*static_cast<C*>(from)));
        static_cast<C*>(from)->~C();
      },
      [](void* s) noexcept { static_cast<C*>(s)->~C(); },
      sizeof(C),
      true,
      std::is_trivially_destructible_v<C>};

  template <class C>
  static constexpr Ops heap_ops{
      [](void* s) { (**static_cast<C**>(s))(); },
      [](void* from, void* to) noexcept { ::new (to) C*(*static_cast<C**>(from)); },
      [](void* s) noexcept { delete *static_cast<C**>(s); },
      sizeof(C*),
      false,
      false};

  template <class C>
  static bool is_null(const C& callable) noexcept {
    if constexpr (std::is_pointer_v<C> || std::is_member_pointer_v<C>) {
      return callable == nullptr;
    } else if constexpr (is_std_function<C>::value) {
      return !callable;
    } else {
      return false;
    }
  }
  template <class C>
  struct is_std_function : std::false_type {};
  template <class Sig>
  struct is_std_function<std::function<Sig>> : std::true_type {};

  void take(Task& other) noexcept {
    if (other.ops_ != nullptr) {
      other.ops_->relocate(other.storage_, storage_);
      ops_ = std::exchange(other.ops_, nullptr);
    }
  }

  // Aligned for any scalar (a long double, an SSE vector), as a node's storage and the buffer
  // TaskNode::cancel_if() moves captures into are.
  alignas(inline_alignment) unsigned char storage_[inline_capacity];
  const Ops* ops_ = nullptr;
};

}  // namespace wheeltimer
