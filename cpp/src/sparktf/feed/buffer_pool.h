// Buffers for feed messages, reused rather than allocated per message: a
// buffer handed out goes back to its pool, keeping its capacity, when its
// last owner lets go (the consumer's batch, or the numpy arrays and tensors
// that view it). At most max_free buffers wait in the pool; others are freed.
// Thread-safe; an owner may let go on any thread, after the pool is gone too.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sparktf::feed {

class BufferPool {
 public:
  explicit BufferPool(size_t max_free = 8);
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // An empty buffer (its capacity kept from earlier use).
  std::shared_ptr<std::string> Get();

  struct Stats {
    uint64_t allocated = 0;  // buffers made
    uint64_t reused = 0;     // buffers handed out again
    size_t free = 0;         // waiting in the pool now
  };
  Stats stats() const;

 private:
  struct State {
    std::mutex mu;
    std::vector<std::unique_ptr<std::string>> free;
    size_t max_free = 0;
    Stats stats;
  };
  std::shared_ptr<State> state_;
};

}  // namespace sparktf::feed
