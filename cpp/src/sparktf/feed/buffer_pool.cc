#include "sparktf/feed/buffer_pool.h"

namespace sparktf::feed {

BufferPool::BufferPool(size_t max_free) : state_(std::make_shared<State>()) {
  state_->max_free = max_free;
}

std::shared_ptr<std::string> BufferPool::Get() {
  std::unique_ptr<std::string> buffer;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->free.empty()) {
      ++state_->stats.allocated;
    } else {
      buffer = std::move(state_->free.back());
      state_->free.pop_back();
      ++state_->stats.reused;
    }
  }
  if (!buffer) buffer = std::make_unique<std::string>();
  std::weak_ptr<State> pool = state_;
  return std::shared_ptr<std::string>(buffer.release(), [pool](std::string* s) {
    std::unique_ptr<std::string> owned(s);
    if (auto state = pool.lock()) {
      owned->clear();
      std::lock_guard<std::mutex> lock(state->mu);
      if (state->free.size() < state->max_free) state->free.push_back(std::move(owned));
    }
  });
}

BufferPool::Stats BufferPool::stats() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  Stats s = state_->stats;
  s.free = state_->free.size();
  return s;
}

}  // namespace sparktf::feed
