// Feed rings: bounded message queues in POSIX shared memory, from several
// producer processes (Spark feeding tasks) to one consumer process (the TF
// process), or back (results).
//
// The consumer creates the segment and unlinks it when closed. Producers
// attach by name and register their pid. Every wait takes a timeout and wakes
// every kLivenessInterval to check the other side: a producer sees the
// consumer's death (Aborted, and it unlinks the orphaned segment), a consumer
// sees a producer that died while attached (Aborted: its data is incomplete).
// A process-shared robust mutex guards the header, so a peer dying while
// holding it does not wedge the ring. Messages are copied in and out whole.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sparktf/common/result.h"

namespace sparktf::feed {

constexpr size_t kDefaultRingCapacity = 64 << 20;
constexpr size_t kMaxRingProducers = 64;
constexpr std::chrono::milliseconds kLivenessInterval{100};
// In the Aborted message of Pop when a registered producer died.
constexpr std::string_view kProducerDied = "died while feeding";

// A message given as byte ranges to concatenate (a batch's header and column
// payloads, say), so that the producer need not assemble it first.
using MessageParts = std::span<const std::string_view>;

struct RingStats {
  uint64_t messages_pushed = 0;
  uint64_t messages_popped = 0;
  uint64_t bytes_pushed = 0;
  uint64_t bytes_used = 0;  // in the ring now, of capacity()
};

class Ring {
 public:
  // Creates the segment `name` ("/sparktf-..."), failing if it exists.
  // capacity: data bytes, rounded up to a multiple of 8; a message may use at
  // most half of it.
  static Result<std::unique_ptr<Ring>> Create(const std::string& name,
                                              size_t capacity = kDefaultRingCapacity);
  // kBulk: for a producer that pushes much data (a feeding task): every page
  // is mapped up front, and the mapping kept for the process's next attach
  // to the same ring. kLight: pages are mapped as touched (results, control).
  enum class AttachFor { kBulk, kLight };
  // Attaches as a producer (registers this pid). NotFound if no such ring.
  static Result<std::unique_ptr<Ring>> Attach(const std::string& name,
                                              AttachFor use = AttachFor::kLight);
  ~Ring();  // Detach(); the creator also unlinks. Never blocks.
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Producer: appends one message, waiting while the ring is full.
  // Aborted if the consumer closed or died; DeadlineExceeded after timeout;
  // InvalidArgument if the message can never fit.
  Status Push(MessageParts message, std::chrono::milliseconds timeout);
  Status Push(std::string_view message, std::chrono::milliseconds timeout) {
    return Push(MessageParts(&message, 1), timeout);
  }
  // Consumer: takes the next message into *out, waiting while empty. One
  // thread at a time (the copy runs outside the lock).
  // OutOfRange once input is closed and the ring is drained; Aborted if a
  // producer died while attached; DeadlineExceeded after timeout.
  Status Pop(std::string* out, std::chrono::milliseconds timeout) {
    return Pop(out, timeout, nullptr, nullptr);
  }
  // The same, placing the message at out->data() + *start so that its byte
  // `aligned_at(message)` lies at a multiple of `kPopAlign` in memory (the
  // message's own first byte when aligned_at is null); *start < kPopAlign.
  static constexpr size_t kPopAlign = 64;
  Status Pop(std::string* out, std::chrono::milliseconds timeout,
             size_t (*aligned_at)(std::string_view message), size_t* start);

  // No more messages will come (any side may say so); Pop drains then ends.
  void CloseInput();
  // Consumer: stop; producers' Push fails with Aborted(reason) from now on.
  void CloseConsumer(const std::string& reason);
  // Producer: unregisters this pid (a clean detach is not a death).
  void Detach();
  // OK while the consumer reads; Aborted(reason) once it closed or died.
  Status ConsumerStatus() const;

  const std::string& name() const { return name_; }
  size_t capacity() const;
  RingStats stats() const;

  // The shared-memory layout (defined in ring.cc; docs/formats/ring.md).
  struct Header;

 private:
  friend struct RingTestPeer;  // ring_test.cc: holds the lock in a process it then kills
  Ring(std::string name, void* base, size_t mapped, bool owner);
  Status Lock() const;
  void Unlock() const;
  // Waits on a condition for at most min(deadline, kLivenessInterval).
  void WaitSlice(bool for_space, std::chrono::steady_clock::time_point deadline) const;

  std::string name_;
  void* base_;
  size_t mapped_;
  bool owner_;
  bool shared_mapping_ = false;  // a producer's mapping, kept for its next attach
  bool detached_ = false;
  Header* h_;
  char* data_;
};

// Removes segments under /dev/shm whose names start with `prefix` and whose
// consumer is dead (left by a killed consumer). Returns the names removed.
std::vector<std::string> SweepStaleRings(const std::string& prefix);

}  // namespace sparktf::feed
