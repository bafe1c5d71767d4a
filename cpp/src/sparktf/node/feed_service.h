// The feed service of a node agent (SPARK mode), and its clients.
//
// The TF process creates one input ring per queue name, named by cluster id,
// executor id and queue (FeedRingName). Feeding tasks find the node's agent
// on an abstract Unix socket (FeedSocketName) when it runs on their machine,
// and over TCP otherwise. The agent answers FEED_OPEN once the ring exists:
// a local task then pushes into the ring itself; a remote task streams
// FEED_DATA frames that the agent pushes for it. Inference partitions are
// served one at a time per node, so their results cannot interleave.
// Protocol: docs/protocol.md.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sparktf/cluster/protocol.h"
#include "sparktf/feed/consumer.h"
#include "sparktf/feed/producer.h"

namespace sparktf::node {

constexpr std::chrono::milliseconds kDefaultFeedTimeout{600000};
// The agent receives a remote batch straight into the ring, where the node's reader
// waits for it before the batches reserved after it: a remote task that sends nothing
// for this long inside a frame (at most the feed timeout) fails, and its batch is
// given up, so that it cannot hold up the node's other feeds for long.
constexpr std::chrono::milliseconds kMidFrameTimeout{30000};

// "/sparktf-<cluster_id>-<executor_id>-<queue>". InvalidArgument unless the
// cluster id and queue name are [A-Za-z0-9_]+.
Result<std::string> FeedRingName(const std::string& cluster_id, int executor_id,
                                 const std::string& queue);
std::string FeedSocketName(const std::string& cluster_id, int executor_id);
// TFCluster names each generation's feeds "<base>g<generation>". The prefix of the ring
// names of every generation of `cluster_id`'s cluster, on every executor (for sweeping
// what a killed agent of an earlier generation left).
std::string FeedRingFamilyPrefix(const std::string& cluster_id);

struct FeedServerOptions {
  std::string cluster_id;
  int executor_id = 0;
  std::string token;
  std::string bind_host = "0.0.0.0";
  std::chrono::milliseconds timeout = kDefaultFeedTimeout;  // longest wait on anything
};

class FeedServer {
 public:
  static Result<std::unique_ptr<FeedServer>> Start(const FeedServerOptions& options);
  ~FeedServer();  // stops accepting, unblocks and joins every session
  FeedServer(const FeedServer&) = delete;
  FeedServer& operator=(const FeedServer&) = delete;

  int port() const { return port_; }
  // The TF process ended: sessions waiting for it fail with `why`.
  void ConsumerExited(const std::string& why);

 private:
  explicit FeedServer(const FeedServerOptions& options) : o_(options) {}
  void AcceptLoop();
  void Serve(UniqueFd fd, bool local);
  Status Session(cluster::Connection& conn, bool local);
  Status WaitForRing(const std::string& ring);
  Status ConsumerGoneLocked() const;

  FeedServerOptions o_;
  int port_ = 0;
  UniqueFd tcp_, unix_, wake_read_, wake_write_;
  std::thread acceptor_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::string consumer_gone_;
  bool inference_busy_ = false;
  uint64_t sessions_ = 0;
  std::vector<int> open_fds_;
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<Worker> workers_;  // finished ones are joined as new ones start
};

struct FeedTarget {
  std::string cluster_id;
  int executor_id = 0;
  HostPort address;  // the agent's TCP feed service
  bool prefer_local = true;  // use the Unix socket when the agent runs here
};

// A feeding task's partition, to one node. `feed` identifies the feeding job
// (non-zero: the node drops rows that an earlier attempt of this partition's
// task delivered; PartitionFeed::Open).
class FeedSession {
 public:
  static Result<std::unique_ptr<FeedSession>> Open(const FeedTarget& target,
                                                   const std::string& token,
                                                   const std::string& queue, uint64_t feed,
                                                   int64_t partition, bool inference,
                                                   std::chrono::milliseconds timeout);
  bool local() const { return static_cast<bool>(local_feed_); }
  // Pushes one encoded batch (given as parts, header first). Cancelled when
  // the consumer stopped reading on purpose (skip the rest).
  Status Push(feed::MessageParts batch);
  Status Push(std::string_view batch) { return Push(feed::MessageParts(&batch, 1)); }
  // The partition is complete; for inference, waits for every result.
  Status Finish();
  std::vector<std::string> TakeResults();
  uint64_t rows_pushed() const { return rows_pushed_; }

 private:
  FeedSession(cluster::Connection conn, std::chrono::milliseconds timeout)
      : conn_(std::move(conn)), timeout_(timeout) {}
  // Remote: sends a frame while taking in what the agent sends meanwhile.
  Status SendFrame(cluster::MessageType type, feed::MessageParts payload);
  Status SendFrame(cluster::MessageType type, std::string_view payload) {
    return SendFrame(type, feed::MessageParts(&payload, 1));
  }
  Status TakeIncoming(bool* done);

  cluster::Connection conn_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<feed::PartitionFeed> local_feed_;
  std::vector<std::string> results_;
  uint64_t rows_pushed_ = 0;
  Status ended_;  // remote: why the agent ended the session (its ERROR), once it did
};

// Tells a node that no more data will come on `queue` (its ring's input is
// closed once drained).
Status CloseFeed(const FeedTarget& target, const std::string& token, const std::string& queue,
                 std::chrono::milliseconds timeout);

// Lockstep through the coordinator (FEED_SYNC, sent as of `generation`: the coordinator
// refuses another generation's); connects on first use.
feed::LockstepSync MakeLockstepSync(const HostPort& coordinator, const std::string& token,
                                    int executor_id, const std::string& queue,
                                    std::chrono::milliseconds timeout, int generation = 0);

}  // namespace sparktf::node
