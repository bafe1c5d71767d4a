#include "sparktf/feed/ring.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>

namespace sparktf::feed {
namespace {

constexpr uint64_t kRingMagic = 0x53544652494e4731ull;  // "STFRING1"
constexpr uint32_t kRingVersion = 3;
// Words that stand where a message's length would: wrap to offset 0, or skip
// the (low 32 bits) bytes of padding that place the next message aligned.
constexpr uint64_t kWrapMarker = ~uint64_t{0};
constexpr uint64_t kPadMarker = 0xFFFFFFFF00000000ull;
bool IsPad(uint64_t word) { return word != kWrapMarker && (word & kPadMarker) == kPadMarker; }
// A message's length word is its length (below 2^40), or, while its producer
// writes it (Ring::Reserve), kPendingFlag | writer pid << 40 | length. A
// pending word with pid 0 is a message given up: the consumer skips it.
constexpr int kLengthBits = 40;
constexpr uint64_t kLengthMask = (uint64_t{1} << kLengthBits) - 1;
constexpr uint64_t kPendingFlag = uint64_t{1} << 62;
constexpr uint64_t kMaxRingCapacity = uint64_t{1} << kLengthBits;
uint64_t PendingWord(int pid, uint64_t len) {
  return kPendingFlag | static_cast<uint64_t>(pid) << kLengthBits | len;
}
int PendingWriter(uint64_t word) {
  return static_cast<int>((word & ~kPendingFlag) >> kLengthBits);
}
using Clock = std::chrono::steady_clock;

size_t Pad8(size_t n) { return (n + 7) & ~size_t{7}; }

bool Alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH); }

timespec MonotonicIn(std::chrono::nanoseconds d) {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  const long long ns = ts.tv_nsec + d.count();
  ts.tv_sec += static_cast<time_t>(ns / 1000000000LL);
  ts.tv_nsec = static_cast<long>(ns % 1000000000LL);
  return ts;
}

}  // namespace

struct Ring::Header {
  uint64_t magic;
  uint32_t version;
  uint32_t header_size;
  uint64_t capacity;
  uint64_t head;  // bytes ever written (monotonic)
  uint64_t tail;  // bytes ever read
  uint32_t input_closed;
  uint32_t consumer_closed;
  int32_t consumer_pid;
  int32_t producer_pids[kMaxRingProducers];  // 0 = free
  uint64_t messages_pushed;
  uint64_t messages_popped;
  uint64_t bytes_pushed;
  char reason[512];
  pthread_mutex_t mu;
  pthread_cond_t not_empty;
  pthread_cond_t not_full;
};

namespace {
size_t PageSize() {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}
size_t RoundToPage(size_t n) { return (n + PageSize() - 1) / PageSize() * PageSize(); }
// The data area starts on a page of its own, so that the consumer can map it
// apart from the header (Ring::EvictHeld).
size_t DataOffset() { return RoundToPage(sizeof(Ring::Header)); }

// Locks a ring's robust mutex; a peer that died holding it left the header
// consistent (head and tail move only after a message is complete).
int LockHeader(Ring::Header* h);
}  // namespace

struct Ring::Reader {
  Reader(Header* header, void* base, size_t size) : h(header), base(base), size(size) {}
  ~Reader() {
    // The closed owner's data pages, freed now that nothing holds them.
    if (truncate && fd >= 0) (void)!::ftruncate(fd, static_cast<off_t>(DataOffset()));
    if (fd >= 0) ::close(fd);
    if (data_mapping) ::munmap(data_mapping, h->capacity);
    if (base) ::munmap(base, size);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // Gives the ring space [begin, end) back; the tail moves over every released
  // byte that follows it. With mu held.
  void ReleaseLocked(uint64_t begin, uint64_t end) {
    if (begin != freed) {
      released.emplace(begin, end);
      return;
    }
    freed = end;
    for (auto it = released.begin(); it != released.end() && it->first == freed;
         it = released.erase(it)) {
      freed = it->second;
    }
    if (LockHeader(h) != 0) return;
    h->tail = freed;
    ::pthread_cond_broadcast(&h->not_full);
    ::pthread_mutex_unlock(&h->mu);
  }
  void Release(uint64_t begin, uint64_t end) {
    std::lock_guard<std::mutex> lock(mu);
    ReleaseLocked(begin, end);
  }
  // The last owner of the message held in place from ring position `id` let go.
  void ReleaseHeld(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = held.find(id); it != held.end()) {
      const uint64_t end = it->second.end;
      held.erase(it);
      ReleaseLocked(id, end);
    } else if (auto ev = evicted.find(id); ev != evicted.end()) {
      if (--ev->second->owners == 0) ::munmap(ev->second->addr, ev->second->len);
      evicted.erase(ev);
    }
  }

  // A data mapping that the consumer stopped reading through; the pages of the
  // messages held in it were replaced by private copies (EvictHeld).
  struct Retired {
    void* addr;
    size_t len;
    size_t owners;  // messages held in it
  };
  struct Held {
    uint64_t end;      // of its ring space
    uint64_t at;       // ring offset of its length word
    uint64_t len;
  };

  Header* h;
  void* base;   // the whole segment, mapped at attach (its data area unmapped once retired)
  size_t size;
  int fd = -1;            // the owner's, for mapping the data area again
  bool truncate = false;  // set by the owner when it closes
  uint64_t read = 0;     // the next byte to read (the reading thread's)
  void* data_mapping = nullptr;  // the data area mapped on its own after an eviction
  std::mutex mu;         // guards what follows
  uint64_t freed = 0;    // the tail as this side last set it
  uint64_t evictions = 0;
  std::map<uint64_t, Held> held;  // held in place, by ring position
  std::map<uint64_t, std::shared_ptr<Retired>> evicted;  // by ring position
  std::map<uint64_t, uint64_t> released;  // begin -> end, released ahead of the tail
};

namespace {
int LockHeader(Ring::Header* h) {
  const int rc = ::pthread_mutex_lock(&h->mu);
  if (rc == EOWNERDEAD) {
    ::pthread_mutex_consistent(&h->mu);
    return 0;
  }
  return rc;
}

// A producer's mappings of rings, kept between its attachments: a feeding
// process attaches once per partition, and mapping a ring (64 MiB by default)
// and unmapping it again cost milliseconds each time. An idle mapping is
// dropped once its segment is unlinked (checked at every attach and release)
// or when more than kMaxIdle are idle; the consumer also frees the data pages
// of a ring it closes, so an idle mapping of a closed ring holds no memory.
class ProducerMappings {
 public:
  static ProducerMappings& Get() {
    static auto* m = new ProducerMappings;  // never destroyed: used until exit
    return *m;
  }

  // A mapping of the open segment `fd` (taken over) with every page mapped.
  Result<void*> Acquire(int fd, const struct stat& st) {
    std::lock_guard<std::mutex> lock(mu_);
    DropIdleLocked();
    for (Entry& e : entries_) {
      if (e.dev == st.st_dev && e.ino == st.st_ino && e.size == static_cast<size_t>(st.st_size)) {
        ::close(fd);
        ++e.users;
        return e.base;
      }
    }
    const auto size = static_cast<size_t>(st.st_size);
    void* base =
        ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
    if (base == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Status::FromErrno("map ring", err);
    }
    // The open fd pins the inode (so no new segment reuses its number) and
    // tells when the segment was unlinked.
    entries_.push_back({st.st_dev, st.st_ino, fd, base, size, 1, 0});
    return base;
  }

  void Release(void* base) {
    std::lock_guard<std::mutex> lock(mu_);
    for (Entry& e : entries_) {
      if (e.base == base) {
        --e.users;
        e.idle_since = ++clock_;
      }
    }
    DropIdleLocked();
  }

 private:
  static constexpr size_t kMaxIdle = 2;
  struct Entry {
    dev_t dev;
    ino_t ino;
    int fd;
    void* base;
    size_t size;
    int users;
    uint64_t idle_since;
  };

  static bool Unlinked(const Entry& e) {
    struct stat st{};
    return ::fstat(e.fd, &st) != 0 || st.st_nlink == 0;
  }

  void DropIdleLocked() {
    auto drop = [](Entry& e) {
      ::munmap(e.base, e.size);
      ::close(e.fd);
      e.base = nullptr;
    };
    size_t idle = 0;
    for (Entry& e : entries_) {
      if (e.users == 0 && Unlinked(e)) drop(e);
      if (e.base && e.users == 0) ++idle;
    }
    while (idle > kMaxIdle) {
      Entry* oldest = nullptr;
      for (Entry& e : entries_) {
        if (e.base && e.users == 0 && (!oldest || e.idle_since < oldest->idle_since)) oldest = &e;
      }
      drop(*oldest);
      --idle;
    }
    entries_.erase(std::remove_if(entries_.begin(), entries_.end(),
                                  [](const Entry& e) { return e.base == nullptr; }),
                   entries_.end());
  }

  std::mutex mu_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
};

}  // namespace

Ring::Ring(std::string name, void* base, size_t mapped, bool owner)
    : name_(std::move(name)), base_(base), mapped_(mapped), owner_(owner) {
  h_ = static_cast<Header*>(base_);
  data_ = static_cast<char*>(base_) + DataOffset();
  reader_ = std::make_shared<Reader>(h_, base_, mapped_);
  reader_->read = reader_->freed = h_->tail;
}

Result<std::unique_ptr<Ring>> Ring::Create(const std::string& name, size_t capacity) {
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos) {
    return Status::InvalidArgument("ring name must look like /name, got '" + name + "'");
  }
  if (capacity > kMaxRingCapacity) {
    return Status::InvalidArgument("ring capacity " + std::to_string(capacity) +
                                   " exceeds the limit of 1 TiB");
  }
  capacity = RoundToPage(std::max<size_t>(capacity, 4096));
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno("create ring " + name, errno);
  const size_t size = DataOffset() + capacity;
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    int err = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    return Status::FromErrno("size ring " + name, err);
  }
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    return Status::FromErrno("map ring " + name, err);
  }
  std::memset(base, 0, DataOffset());
  auto* h = static_cast<Header*>(base);
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&h->mu, &ma);
  pthread_mutexattr_destroy(&ma);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->not_empty, &ca);
  pthread_cond_init(&h->not_full, &ca);
  pthread_condattr_destroy(&ca);
  h->version = kRingVersion;
  h->header_size = static_cast<uint32_t>(DataOffset());
  h->capacity = capacity;
  h->consumer_pid = ::getpid();
  __atomic_store_n(&h->magic, kRingMagic, __ATOMIC_RELEASE);  // last: now valid
  std::unique_ptr<Ring> ring(new Ring(name, base, size, true));
  ring->reader_->fd = fd;
  return ring;
}

Result<std::unique_ptr<Ring>> Ring::Attach(const std::string& name, AttachFor use) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno("attach to ring " + name, errno);
  struct stat st{};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < DataOffset() + 4096) {
    ::close(fd);
    return Status::InvalidArgument("ring " + name + " is too small to be a sparktf ring");
  }
  const auto size = static_cast<size_t>(st.st_size);
  void* base;
  if (use == AttachFor::kBulk) {
    ASSIGN_OR_RETURN(base, ProducerMappings::Get().Acquire(fd, st));
  } else {
    base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
    if (base == MAP_FAILED) return Status::FromErrno("map ring " + name, errno);
  }
  std::unique_ptr<Ring> ring(new Ring(name, base, size, false));
  ring->shared_mapping_ = use == AttachFor::kBulk;
  if (ring->shared_mapping_) ring->reader_->base = nullptr;  // ProducerMappings' to unmap
  auto* h = static_cast<Header*>(base);
  if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != kRingMagic ||
      h->version != kRingVersion || h->header_size != DataOffset() ||
      DataOffset() + h->capacity != size) {
    ring->detached_ = true;
    return Status::InvalidArgument("ring " + name + " has an unknown layout");
  }
  RETURN_NOT_OK(ring->Lock());
  int slot = -1;
  for (size_t i = 0; i < kMaxRingProducers; ++i) {
    if (h->producer_pids[i] == 0 || !Alive(h->producer_pids[i])) {
      slot = static_cast<int>(i);
      break;
    }
  }
  if (slot >= 0) h->producer_pids[slot] = ::getpid();
  ring->Unlock();
  if (slot < 0) {
    ring->detached_ = true;
    return Status::ResourceExhausted("ring " + name + " already has " +
                                     std::to_string(kMaxRingProducers) + " producers");
  }
  return ring;
}

Ring::~Ring() {
  if (owner_) {
    CloseConsumer("the consumer closed the ring");
    // Free the data pages rather than when the last producer unmaps: no
    // producer touches the data of a closed ring (they check under the lock
    // that CloseConsumer took), and the header stays. Messages still held
    // move out first; if they cannot, they keep the pages until they go.
    ::shm_unlink(name_.c_str());
    if (reader_->fd >= 0 && EvictHeld().ok()) {
      (void)!::ftruncate(reader_->fd, static_cast<off_t>(DataOffset()));
    } else {
      reader_->truncate = true;
    }
  } else {
    Detach();
  }
  if (shared_mapping_) ProducerMappings::Get().Release(base_);
}

Status Ring::Lock() const {
  const int rc = LockHeader(h_);
  if (rc != 0) return Status::FromErrno("lock ring " + name_, rc);
  return Status::OK();
}

void Ring::Unlock() const { ::pthread_mutex_unlock(&h_->mu); }

void Ring::WaitSlice(bool for_space, Clock::time_point deadline) const {
  auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
  left = std::min<std::chrono::nanoseconds>(left, kLivenessInterval);
  if (left.count() <= 0) return;
  timespec ts = MonotonicIn(left);
  int rc = ::pthread_cond_timedwait(for_space ? &h_->not_full : &h_->not_empty, &h_->mu, &ts);
  if (rc == EOWNERDEAD) ::pthread_mutex_consistent(&h_->mu);
}

size_t Ring::capacity() const { return h_->capacity; }

Status Ring::ReserveLocked(uint64_t len, std::chrono::milliseconds timeout, size_t align_at,
                           uint64_t* at) {
  const uint64_t cap = h_->capacity;
  const uint64_t need = 8 + Pad8(len);
  // Padding before a message that lands at ring offset `pos` (the data area
  // starts 64-aligned, so offsets and addresses agree modulo kPopAlign).
  auto pad_at = [align_at](uint64_t pos) -> uint64_t {
    const uint64_t a = (pos + 8 + align_at) % kPopAlign;
    return a ? kPopAlign - a : 0;
  };
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (h_->consumer_closed) {
      std::string reason(h_->reason, strnlen(h_->reason, sizeof(h_->reason)));
      Unlock();
      return Status::Aborted("ring " + name_ + ": " + reason);
    }
    const uint64_t pos = h_->head % cap;
    uint64_t skip = 0;
    uint64_t pad = pad_at(pos);
    if (cap - pos < pad + need) {
      skip = cap - pos;
      pad = pad_at(0);
    }
    if (cap - (h_->head - h_->tail) >= skip + pad + need) {
      if (skip) {
        std::memcpy(data_ + pos, &kWrapMarker, 8);
        h_->head += skip;
      }
      if (pad) {
        const uint64_t word = kPadMarker | pad;
        std::memcpy(data_ + h_->head % cap, &word, 8);
        h_->head += pad;
      }
      *at = h_->head % cap;
      h_->head += need;
      return Status::OK();
    }
    if (!Alive(h_->consumer_pid)) {
      const int pid = h_->consumer_pid;
      h_->consumer_closed = 1;
      Unlock();
      ::shm_unlink(name_.c_str());  // orphaned: nobody else will remove it
      return Status::Aborted("ring " + name_ + ": the consumer (pid " + std::to_string(pid) +
                             ") died");
    }
    if (Clock::now() >= deadline) {
      Unlock();
      return Status::DeadlineExceeded(
          "ring " + name_ + " stayed full for " + std::to_string(timeout.count() / 1000) +
          " s: the consumer (pid " + std::to_string(h_->consumer_pid) + ") is not reading");
    }
    WaitSlice(true, deadline);
  }
}

Status Ring::CheckMessage(uint64_t len, size_t align_at) const {
  if (8 + Pad8(len) > max_message()) {
    return Status::InvalidArgument("a message of " + std::to_string(len) +
                                   " bytes does not fit ring " + name_ + " of " +
                                   std::to_string(capacity()) + " bytes (at most " +
                                   std::to_string(max_message() - 8) +
                                   "; lower the batch size or enlarge the ring)");
  }
  if (align_at % 8 != 0) {
    return Status::InvalidArgument("ring alignment offset " + std::to_string(align_at) +
                                   " is not a multiple of 8");
  }
  return Status::OK();
}

Status Ring::Push(MessageParts message, std::chrono::milliseconds timeout, size_t align_at) {
  uint64_t len = 0;
  for (std::string_view part : message) len += part.size();
  auto copy_to = [&message](char* to) {
    for (std::string_view part : message) {
      if (!part.empty()) std::memcpy(to, part.data(), part.size());
      to += part.size();
    }
  };
  if (!owner_) {  // copied outside the lock: the consumer and other producers go on meanwhile
    ASSIGN_OR_RETURN(RingReservation space, Reserve(len, timeout, align_at));
    copy_to(space.bytes().data());
    return space.Commit();
  }
  RETURN_NOT_OK(CheckMessage(len, align_at));
  RETURN_NOT_OK(Lock());
  uint64_t at;
  RETURN_NOT_OK(ReserveLocked(len, timeout, align_at, &at));
  std::memcpy(data_ + at, &len, 8);
  copy_to(data_ + at + 8);
  ++h_->messages_pushed;
  h_->bytes_pushed += len;
  ::pthread_cond_signal(&h_->not_empty);
  Unlock();
  return Status::OK();
}

Result<RingReservation> Ring::Reserve(uint64_t len, std::chrono::milliseconds timeout,
                                      size_t align_at) {
  if (owner_) {
    return Status::InvalidArgument("ring " + name_ + ": its consumer cannot reserve space");
  }
  RETURN_NOT_OK(CheckMessage(len, align_at));
  RETURN_NOT_OK(Lock());
  uint64_t at;
  RETURN_NOT_OK(ReserveLocked(len, timeout, align_at, &at));
  const uint64_t pending = PendingWord(::getpid(), len);
  std::memcpy(data_ + at, &pending, 8);
  Unlock();
  return RingReservation(this, at, len, data_ + at + 8);
}

RingReservation& RingReservation::operator=(RingReservation&& other) noexcept {
  if (this != &other) {
    Abandon();
    ring_ = std::exchange(other.ring_, nullptr);
    at_ = other.at_;
    len_ = other.len_;
    data_ = other.data_;
  }
  return *this;
}

Status RingReservation::Commit() {
  if (!ring_) return Status::Internal("ring reservation already committed or given up");
  return Finish(true);
}

void RingReservation::Abandon() {
  if (ring_) (void)Finish(false);
}

Status RingReservation::Finish(bool commit) {
  Ring* ring = std::exchange(ring_, nullptr);
  Ring::Header* h = ring->h_;
  // The lock orders the message's bytes before its length word for the consumer.
  RETURN_NOT_OK(ring->Lock());
  const uint64_t word = commit ? len_ : PendingWord(0, len_);
  std::memcpy(ring->data_ + at_, &word, 8);
  if (commit) {
    ++h->messages_pushed;
    h->bytes_pushed += len_;
  }
  ::pthread_cond_signal(&h->not_empty);
  std::string reason;
  if (h->consumer_closed) reason.assign(h->reason, strnlen(h->reason, sizeof(h->reason)));
  ring->Unlock();
  if (commit && !reason.empty()) return Status::Aborted("ring " + ring->name_ + ": " + reason);
  return Status::OK();
}

Status Ring::Take(std::chrono::milliseconds timeout, const char** message, uint64_t* len,
                  uint64_t* begin, uint64_t* end) {
  const uint64_t cap = h_->capacity;
  Reader& r = *reader_;
  const auto deadline = Clock::now() + timeout;
  RETURN_NOT_OK(Lock());
  *begin = r.read;
  while (true) {
    bool pending = false;  // the next message is still being written
    if (h_->head != r.read) {
      const uint64_t at = r.read % cap;
      uint64_t word;
      std::memcpy(&word, data_ + at, 8);
      if (word == kWrapMarker) {
        r.read += cap - at;
        continue;
      }
      if (IsPad(word)) {
        const uint64_t pad = word & ~kPadMarker;
        if (pad < 8 || pad >= kPopAlign || pad % 8 != 0 || at + pad > cap) {
          Unlock();
          return Status::DataLoss("ring " + name_ + " is corrupt at byte " + std::to_string(at));
        }
        r.read += pad;
        continue;
      }
      const uint64_t length = word & kLengthMask;
      if ((word >> 63) != 0 || 8 + Pad8(length) > max_message() || at + 8 + length > cap) {
        Unlock();
        return Status::DataLoss("ring " + name_ + " is corrupt at byte " + std::to_string(at));
      }
      if (word & kPendingFlag) {
        const int writer = PendingWriter(word);
        if (writer != 0 && !Alive(writer)) {  // it died writing: skip what it left
          const uint64_t abandoned = kPendingFlag | length;
          std::memcpy(data_ + at, &abandoned, 8);
          continue;
        }
        if (writer == 0) {  // abandoned: its space is released with what follows
          r.read += 8 + Pad8(length);
          continue;
        }
        pending = true;
      } else {
        // The message stays put until its space is released: only this (single)
        // consumer moves `tail`, and producers write only past `head`.
        ++h_->messages_popped;
        Unlock();
        *message = data_ + at + 8;
        *len = length;
        r.read += 8 + Pad8(length);
        *end = r.read;
        return Status::OK();
      }
    }
    if (h_->input_closed && !pending) {
      Unlock();
      return Status::OutOfRange("ring " + name_ + " closed and drained");
    }
    for (int32_t& pid : h_->producer_pids) {
      if (pid != 0 && !Alive(pid)) {
        const int dead = pid;
        pid = 0;
        Unlock();
        return Status::Aborted("ring " + name_ + ": producer pid " + std::to_string(dead) + " " +
                               std::string(kProducerDied) + "; its data is incomplete");
      }
    }
    if (Clock::now() >= deadline) {
      Unlock();
      return Status::DeadlineExceeded("ring " + name_ + " had no data for " +
                                      std::to_string(timeout.count() / 1000) +
                                      " s: are the feeding tasks running?");
    }
    WaitSlice(false, deadline);
  }
}

namespace {
// Copies a message to out->data() + *start, its byte `k` at a multiple of `align`.
void CopyAligned(const char* message, uint64_t len, size_t k, size_t align, std::string* out,
                 size_t* start) {
  out->clear();
  out->reserve(len + align);  // data() stays put from here on
  const uintptr_t addr = reinterpret_cast<uintptr_t>(out->data()) + k;
  *start = (align - addr % align) % align;
  out->assign(*start, '\0');
  out->append(message, len);
}
}  // namespace

Status Ring::Pop(std::string* out, std::chrono::milliseconds timeout) {
  const char* message;
  uint64_t len, begin, end;
  RETURN_NOT_OK(Take(timeout, &message, &len, &begin, &end));
  // Copied without the lock: producers are not held up by the allocation and copy.
  out->assign(message, len);
  reader_->Release(begin, end);
  return Status::OK();
}

Status Ring::PopHeld(HeldMessage* out, std::chrono::milliseconds timeout, BufferPool* pool,
                     size_t (*aligned_at)(std::string_view message)) {
  const bool can_hold = owner_ && reader_->fd >= 0;
  if (can_hold) {
    uint64_t span;
    {
      std::lock_guard<std::mutex> lock(reader_->mu);
      span = reader_->read - reader_->freed;
    }
    // Held messages pin the tail: past the limit, they move out of the ring.
    if (span > hold_limit()) RETURN_NOT_OK(EvictHeld());
  }
  const char* message;
  uint64_t len, begin, end;
  RETURN_NOT_OK(Take(timeout, &message, &len, &begin, &end));
  const size_t k = aligned_at ? aligned_at(std::string_view(message, len)) : 0;
  // A producer that did not say where to align it (Push's align_at) gets a copy.
  out->in_place = can_hold && reinterpret_cast<uintptr_t>(message + k) % kPopAlign == 0;
  if (out->in_place) {
    {
      std::lock_guard<std::mutex> lock(reader_->mu);
      reader_->held.emplace(begin, Reader::Held{end, static_cast<uint64_t>(message - 8 - data_),
                                                len});
    }
    std::shared_ptr<Reader> reader = reader_;
    out->owner = std::shared_ptr<const void>(
        message, [reader, begin](const void*) { reader->ReleaseHeld(begin); });
    out->bytes = std::string_view(message, len);
    return Status::OK();
  }
  std::shared_ptr<std::string> buffer = pool->Get();
  size_t start = 0;
  CopyAligned(message, len, k, kPopAlign, buffer.get(), &start);
  reader_->Release(begin, end);
  out->bytes = std::string_view(*buffer).substr(start);
  out->owner = std::move(buffer);
  return Status::OK();
}

Status Ring::EvictHeld() {
  Reader& r = *reader_;
  const size_t cap = h_->capacity;
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.held.empty()) return Status::OK();
  // Future messages are read through a fresh mapping of the data area.
  void* fresh = ::mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd,
                       static_cast<off_t>(DataOffset()));
  if (fresh == MAP_FAILED) return Status::FromErrno("map ring " + name_ + " again", errno);
  // The pages of every held message become private copies at the same
  // addresses (mremap swaps them in at once; a reader on another thread sees
  // the same bytes before and after).
  std::vector<std::pair<uintptr_t, uintptr_t>> pages;
  const uintptr_t data = reinterpret_cast<uintptr_t>(data_);
  for (const auto& [id, m] : r.held) {
    const uintptr_t lo = data + m.at;
    const uintptr_t hi = lo + 8 + m.len;
    pages.emplace_back(lo / PageSize() * PageSize(), RoundToPage(hi));
  }
  std::sort(pages.begin(), pages.end());
  std::vector<std::pair<uintptr_t, uintptr_t>> merged;
  for (const auto& p : pages) {
    if (!merged.empty() && p.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, p.second);
    } else {
      merged.push_back(p);
    }
  }
  Status st = Lock();  // no Push through this object writes into data_ meanwhile
  if (!st.ok()) {
    ::munmap(fresh, cap);
    return st;
  }
  for (const auto& [lo, hi] : merged) {
    const size_t n = hi - lo;
    void* copy = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) {
      st = Status::FromErrno("copy held messages of ring " + name_, errno);
      break;
    }
    std::memcpy(copy, reinterpret_cast<void*>(lo), n);
    if (::mremap(copy, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(lo)) ==
        MAP_FAILED) {
      st = Status::FromErrno("move held messages of ring " + name_, errno);
      ::munmap(copy, n);
      break;
    }
  }
  // From here the old data mapping is retired, whatever happened: some of its
  // pages may be private now, so it no longer shows what producers write.
  auto retired = std::make_shared<Reader::Retired>(Reader::Retired{data_, cap, r.held.size()});
  for (const auto& held : r.held) r.evicted.emplace(held.first, retired);
  r.held.clear();
  r.released.clear();
  r.freed = r.read;  // every byte before `read` is now released or copied out
  h_->tail = r.freed;
  ::pthread_cond_broadcast(&h_->not_full);
  data_ = static_cast<char*>(fresh);
  r.data_mapping = fresh;
  ++r.evictions;
  Unlock();
  return st;
}

void Ring::CloseInput() {
  if (!Lock().ok()) return;
  h_->input_closed = 1;
  ::pthread_cond_broadcast(&h_->not_empty);
  Unlock();
}

void Ring::CloseConsumer(const std::string& reason) {
  if (!Lock().ok()) return;
  if (!h_->consumer_closed) {
    h_->consumer_closed = 1;
    std::strncpy(h_->reason, reason.c_str(), sizeof(h_->reason) - 1);
  }
  ::pthread_cond_broadcast(&h_->not_full);
  Unlock();
}

void Ring::Detach() {
  if (owner_ || detached_) return;
  detached_ = true;
  if (!Lock().ok()) return;
  for (int32_t& pid : h_->producer_pids) {
    if (pid == ::getpid()) {
      pid = 0;
      break;
    }
  }
  ::pthread_cond_broadcast(&h_->not_empty);
  Unlock();
}

Status Ring::ConsumerStatus() const {
  RETURN_NOT_OK(Lock());
  const int pid = h_->consumer_pid;
  std::string reason;
  if (h_->consumer_closed) reason.assign(h_->reason, strnlen(h_->reason, sizeof(h_->reason)));
  Unlock();
  if (!reason.empty()) return Status::Aborted("ring " + name_ + ": " + reason);
  if (!Alive(pid)) {
    return Status::Aborted("ring " + name_ + ": the consumer (pid " + std::to_string(pid) + ") died");
  }
  return Status::OK();
}

RingStats Ring::stats() const {
  RingStats s;
  if (!Lock().ok()) return s;
  s.messages_pushed = h_->messages_pushed;
  s.messages_popped = h_->messages_popped;
  s.bytes_pushed = h_->bytes_pushed;
  s.bytes_used = h_->head - h_->tail;
  Unlock();
  std::lock_guard<std::mutex> lock(reader_->mu);
  for (const auto& [begin, m] : reader_->held) s.bytes_held += m.end - begin;
  s.evictions = reader_->evictions;
  return s;
}

std::vector<std::string> SweepStaleRings(const std::string& prefix) {
  std::vector<std::string> removed;
  DIR* dir = ::opendir("/dev/shm");
  if (!dir) return removed;
  const std::string bare = prefix.size() && prefix[0] == '/' ? prefix.substr(1) : prefix;
  while (dirent* e = ::readdir(dir)) {
    std::string n = e->d_name;
    if (n.rfind(bare, 0) != 0) continue;
    const std::string name = "/" + n;
    int fd = ::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) continue;
    Ring::Header h{};
    const ssize_t got = ::pread(fd, &h, sizeof(h), 0);
    ::close(fd);
    if (got == static_cast<ssize_t>(sizeof(h)) && h.magic == kRingMagic && Alive(h.consumer_pid)) {
      continue;
    }
    if (::shm_unlink(name.c_str()) == 0) removed.push_back(name);
  }
  ::closedir(dir);
  return removed;
}

}  // namespace sparktf::feed
