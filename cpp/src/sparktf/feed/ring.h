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
// holding it does not wedge the ring. A producer reserves a message's space
// under the lock and writes it outside (Push copies; Reserve hands the space
// to the caller, to receive into); the consumer takes messages out as copies
// (Pop) or in place (PopHeld), in the order they were reserved.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparktf/common/result.h"
#include "sparktf/feed/buffer_pool.h"

namespace sparktf::feed {

constexpr size_t kDefaultRingCapacity = 64 << 20;
constexpr size_t kMaxRingProducers = 64;
constexpr std::chrono::milliseconds kLivenessInterval{100};
// In the Aborted message of Pop when a registered producer died.
constexpr std::string_view kProducerDied = "died while feeding";

// A message given as byte ranges to concatenate (a batch's header and column
// payloads, say), so that the producer need not assemble it first.
using MessageParts = std::span<const std::string_view>;

// A message the consumer took out (Ring::PopHeld): `bytes` stays valid while `owner` or
// a copy of it lives, on any thread, after the Ring is gone too. In place, its ring space
// stays in use as long.
struct HeldMessage {
  std::shared_ptr<const void> owner;
  std::string_view bytes;
  bool in_place = false;
};

class Ring;

// Space for one message that a producer reserved (Ring::Reserve) and writes
// outside the ring's lock. The consumer reads every message before it, then
// waits for it: fill it promptly, then Commit. Dropped or abandoned before
// its commit, it is skipped by the consumer. Must not outlive its Ring; one
// thread at a time.
class RingReservation {
 public:
  RingReservation() = default;
  RingReservation(RingReservation&& other) noexcept { *this = std::move(other); }
  RingReservation& operator=(RingReservation&& other) noexcept;
  ~RingReservation() { Abandon(); }

  // The message's bytes, to be written in full before Commit.
  std::span<char> bytes() const { return {data_, static_cast<size_t>(len_)}; }
  // Publishes the message. Aborted if the consumer closed or died meanwhile
  // (the message is published all the same, and will not be read).
  Status Commit();
  // Gives the space up: the consumer skips it. No-op once committed.
  void Abandon();

 private:
  friend class Ring;
  RingReservation(Ring* ring, uint64_t at, uint64_t len, char* data)
      : ring_(ring), at_(at), len_(len), data_(data) {}
  // Writes the final length word of the message (Commit, Abandon).
  Status Finish(bool commit);
  Ring* ring_ = nullptr;  // null once committed or abandoned
  uint64_t at_ = 0;       // ring offset of the length word
  uint64_t len_ = 0;
  char* data_ = nullptr;
};

struct RingStats {
  uint64_t messages_pushed = 0;
  uint64_t messages_popped = 0;
  uint64_t bytes_pushed = 0;
  uint64_t bytes_used = 0;  // in the ring now, of capacity()
  uint64_t bytes_held = 0;  // of bytes_used: messages the consumer holds in place
  uint64_t evictions = 0;   // times held messages were moved out (Ring::PopHeld)
};

class Ring {
 public:
  // Creates the segment `name` ("/sparktf-..."), failing if it exists.
  // capacity: data bytes, rounded up to a multiple of the page size; a
  // message may use at most max_message() of it.
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

  // Producer: appends one message, waiting while the ring is full, placed so
  // that its byte `align_at` (a multiple of 8) lies at a multiple of kPopAlign
  // in memory. Aborted if the consumer closed or died; DeadlineExceeded after
  // timeout; InvalidArgument if the message can never fit.
  Status Push(MessageParts message, std::chrono::milliseconds timeout, size_t align_at = 0);
  Status Push(std::string_view message, std::chrono::milliseconds timeout,
              size_t align_at = 0) {
    return Push(MessageParts(&message, 1), timeout, align_at);
  }
  // Producer: reserves space for one message of `len` bytes, placed and
  // waited for as Push's, for the caller to write (a frame received from a
  // socket straight into the ring, say). Errors as Push's; InvalidArgument
  // on the ring's creator, whose Push copies under the lock (so that moving
  // held messages out, PopHeld, never races a write through its mapping).
  Result<RingReservation> Reserve(uint64_t len, std::chrono::milliseconds timeout,
                                  size_t align_at = 0);
  // Consumer: takes the next message into *out, waiting while empty. One
  // thread at a time (the copy runs outside the lock).
  // OutOfRange once input is closed and the ring is drained; Aborted if a
  // producer died while attached; DeadlineExceeded after timeout.
  Status Pop(std::string* out, std::chrono::milliseconds timeout);
  // The alignment of messages that producers place (Push) and PopHeld copies.
  static constexpr size_t kPopAlign = 64;
  // Consumer: the next message in place (no copy), on a ring this object
  // created (otherwise, or when the producer did not align it, copied into a
  // buffer of `pool`, its byte aligned_at(message) at a multiple of kPopAlign).
  // Held space returns to producers as owners go, in any order. Held messages
  // pin the tail, so once they span more than hold_limit() bytes, PopHeld first
  // moves them out of the ring: their pages become private copies at the same
  // addresses, and the ring is read through a new mapping from then on. So a
  // held message never stops a producer for long: with at most a quarter held
  // and the rest read, 3/4 of the ring is one free arc, and any message of up
  // to max_message() fits in it, across the wrap or not. Errors as Pop's.
  Status PopHeld(HeldMessage* out, std::chrono::milliseconds timeout, BufferPool* pool,
                 size_t (*aligned_at)(std::string_view message));

  // The largest message (in bytes, with its 8-byte length) and the span of
  // held messages past which PopHeld moves them out.
  size_t max_message() const { return capacity() * 3 / 8 - 2 * kPopAlign; }
  size_t hold_limit() const { return capacity() / 4; }

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

  // The shared-memory layout (defined in ring.cc; docs/formats/feed.md).
  struct Header;
  // The consumer's read position and held space, shared with held messages.
  struct Reader;

 private:
  friend struct RingTestPeer;  // ring_test.cc: holds the lock in a process it then kills
  friend class RingReservation;
  // With the lock held: waits for room and reserves it for a message of `len`
  // bytes; on success, the lock is still held and *at is the ring offset of
  // its length word (the space is the ring's from *at to head). On error the
  // lock is released.
  Status ReserveLocked(uint64_t len, std::chrono::milliseconds timeout, size_t align_at,
                       uint64_t* at);
  // InvalidArgument for a message that can never fit, or a bad align_at.
  Status CheckMessage(uint64_t len, size_t align_at) const;
  Ring(std::string name, void* base, size_t mapped, bool owner);
  Status Lock() const;
  void Unlock() const;
  // Waits on a condition for at most min(deadline, kLivenessInterval).
  void WaitSlice(bool for_space, std::chrono::steady_clock::time_point deadline) const;
  // Moves the held messages out of the ring (PopHeld).
  Status EvictHeld();
  // Waits for the next message and returns where it lies: [*begin, *end) is the
  // ring space to release for it (with any wrap or padding before it).
  Status Take(std::chrono::milliseconds timeout, const char** message, uint64_t* len,
              uint64_t* begin, uint64_t* end);

  std::string name_;
  void* base_;
  size_t mapped_;
  bool owner_;
  bool shared_mapping_ = false;  // a producer's mapping, kept for its next attach
  bool detached_ = false;
  Header* h_;
  char* data_;
  std::shared_ptr<Reader> reader_;
};

// Removes segments under /dev/shm whose names start with `prefix` and whose
// consumer is dead (left by a killed consumer). Returns the names removed.
std::vector<std::string> SweepStaleRings(const std::string& prefix);

}  // namespace sparktf::feed
