// ProducerTokens: one moodycamel explicit-producer token per thread for one queue, found through a
// small per-thread cache. Enqueueing through a token skips moodycamel's implicit-producer lookup
// (a hash of the thread id), and an explicit producer's enqueue path is the queue's fastest.
//
// Tokens live as long as the queue's owner (declare the ProducerTokens after the queue, so they
// are destroyed first, as moodycamel requires), one per thread that ever enqueued: a thread that
// misses in its cache finds its token again by its thread id rather than making a new one. Cache
// entries carry a process-wide unique id, never an address, so an entry of a destroyed owner can
// never match a new one.
//
// Threads: mine() from any thread; the returned token is for the calling thread only.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <concurrentqueue/concurrentqueue.h>

namespace wheeltimer::detail {

template <class Queue>
class ProducerTokens {
 public:
  explicit ProducerTokens(Queue& queue) : queue_(queue), id_(next_id()) {}
  ProducerTokens(const ProducerTokens&) = delete;
  ProducerTokens& operator=(const ProducerTokens&) = delete;

  // The calling thread's token; throws std::bad_alloc if a new one cannot be made.
  moodycamel::ProducerToken& mine() {
    for (const CacheEntry& entry : cache_) {
      if (entry.id == id_) return *entry.token;
    }
    return find_or_make();
  }

 private:
  struct CacheEntry {
    std::uint64_t id = 0;  // 0: empty
    moodycamel::ProducerToken* token = nullptr;
  };
  static constexpr std::size_t kCacheSize = 4;

  static std::uint64_t next_id() noexcept {
    static std::atomic<std::uint64_t> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  moodycamel::ProducerToken& find_or_make() {
    moodycamel::ProducerToken* token = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const std::thread::id self = std::this_thread::get_id();
      for (const auto& [owner, existing] : tokens_) {
        if (owner == self) token = existing.get();
      }
      if (token == nullptr) {
        auto made = std::make_unique<moodycamel::ProducerToken>(queue_);
        if (!made->valid()) throw std::bad_alloc();
        token = made.get();
        tokens_.reserve(tokens_.size() + 1);  // so the push cannot throw after the token exists
        tokens_.emplace_back(self, std::move(made));
      }
    }
    cache_[victim_++ % kCacheSize] = CacheEntry{id_, token};
    return *token;
  }

  Queue& queue_;
  const std::uint64_t id_;
  std::mutex mutex_;
  std::vector<std::pair<std::thread::id, std::unique_ptr<moodycamel::ProducerToken>>> tokens_;

  static thread_local std::array<CacheEntry, kCacheSize> cache_;
  static thread_local std::size_t victim_;
};

template <class Queue>
thread_local std::array<typename ProducerTokens<Queue>::CacheEntry,
                        ProducerTokens<Queue>::kCacheSize>
    ProducerTokens<Queue>::cache_{};
template <class Queue>
thread_local std::size_t ProducerTokens<Queue>::victim_ = 0;

}  // namespace wheeltimer::detail
