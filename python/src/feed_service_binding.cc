// sparktf._native feed service API: the TF process's FeedReader, a feeding
// task's FeedSession, and the driver's close_feed.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstring>

#include "bindings.h"
#include "sparktf/feed/consumer.h"
#include "sparktf/node/feed_service.h"
#include "sparktf/node/feed_task.h"
#include "tf_feed_source.h"

namespace sparktf::python {
namespace {

using namespace sparktf::feed;
using node::FeedSession;
using node::FeedTarget;

nb::bytes ToBytes(const std::string& s) { return nb::bytes(s.data(), s.size()); }

// What the TensorFlow op SparktfFeedNext reads (tf_feed_source.h). It outlives the
// reader on purpose: a dataset may still hold its address after close(), and then
// gets FailedPrecondition-like errors instead of a dangling pointer.
struct TfFeedSource {
  std::weak_ptr<FeedReader> reader;
};

// SparktfFeedColumn's owner is the slice's std::shared_ptr<const void>.
void* HoldBuffer(const void* owner) {
  return new std::shared_ptr<const void>(*static_cast<const std::shared_ptr<const void>*>(owner));
}
void ReleaseBuffer(void* held) { delete static_cast<std::shared_ptr<const void>*>(held); }

int32_t TfFeedNext(void* source, uint64_t rows, int64_t timeout_ms, void* sink,
                   SparktfFeedEmit emit, char* error, size_t error_size) {
  auto fail = [&](const Status& st) {
    const std::string& m = st.message();
    const size_t n = std::min(m.size(), error_size - 1);
    std::memcpy(error, m.data(), n);
    error[n] = '\0';
    return -static_cast<int32_t>(st.code());
  };
  std::shared_ptr<FeedReader> reader = static_cast<TfFeedSource*>(source)->reader.lock();
  if (!reader) return fail(Status::InvalidArgument("the feed is closed"));
  auto got = reader->NextSlice(rows, true, std::chrono::milliseconds(timeout_ms));
  if (!got.ok()) return fail(got.status());
  if (!*got) return 0;
  const BatchSlice& slice = **got;
  for (size_t k = 0; k < slice.columns.size(); ++k) {
    const ColumnView& c = slice.columns[k];
    if (c.type == ColumnType::kBytes) {
      return fail(Status::InvalidArgument("column '" + c.name + "' holds bytes, which the "
                                          "feed op does not read"));
    }
    std::vector<uint64_t> dims = c.dims;
    dims[0] = slice.rows;
    const std::string_view values = SliceValues(slice, k);
    const SparktfFeedColumn column{static_cast<int32_t>(c.type),
                                   static_cast<int32_t>(dims.size()),
                                   dims.data(),
                                   values.data(),
                                   values.size(),
                                   &slice.owner,
                                   &HoldBuffer,
                                   &ReleaseBuffer};
    emit(sink, static_cast<int32_t>(k), &column);
  }
  return 1;
}

class PyFeedReader {
 public:
  // Creates the ring `ring_name`; with a coordinator address, lockstep and
  // feed accounting go through it.
  PyFeedReader(const std::string& ring_name, size_t capacity, const std::string& coordinator,
               const std::string& token, int executor_id, const std::string& queue,
               int generation) {
    auto ring = ValueOrThrow(Ring::Create(ring_name, capacity));
    LockstepSync sync;
    if (!coordinator.empty()) {
      HostPort addr = ValueOrThrow(ParseHostPort(coordinator));
      sync = node::MakeLockstepSync(addr, token, executor_id, queue, std::chrono::seconds(30),
                                    generation);
    }
    r_ = std::make_shared<FeedReader>(std::move(ring), std::move(sync));
  }
  // The next batch, decoded: (rows, {name: numpy array}), or None at the end
  // of the feed.
  nb::object NextColumns(uint64_t n, bool exact, double timeout, bool row_arrays) {
    Result<std::optional<BatchSlice>> got = Status::Internal("unset");
    {
      nb::gil_scoped_release release;
      got = Live()->NextSlice(n, exact, Ms(timeout));
    }
    auto batch = ValueOrThrow(std::move(got));
    if (!batch) return nb::none();
    return SliceToColumns(std::move(*batch), row_arrays);
  }
  void PushResults(nb::bytes batch, double timeout) {
    std::string_view b(batch.c_str(), batch.size());
    Status st;
    {
      nb::gil_scoped_release release;
      st = Live()->PushResults(b, Ms(timeout));
    }
    ThrowIfError(st);
  }
  // [(name, dtype name, per-row shape)] of the first batch, or None if the
  // feed ended empty.
  nb::object PeekSchema(double timeout) {
    Result<std::optional<std::vector<ColumnView>>> got = Status::Internal("unset");
    {
      nb::gil_scoped_release release;
      got = Live()->PeekSchema(Ms(timeout));
    }
    auto schema = ValueOrThrow(std::move(got));
    if (!schema) return nb::none();
    nb::list out;
    for (const auto& c : *schema) {
      nb::list shape;
      for (size_t i = 1; i < c.dims.size(); ++i) shape.append(c.dims[i]);
      out.append(nb::make_tuple(c.name, std::string(ColumnTypeName(c.type)), nb::tuple(shape)));
    }
    return out;
  }
  void Terminate() {
    FeedReader* r = Live();
    nb::gil_scoped_release release;  // waits for a Next of another thread to give up
    r->Terminate();
  }
  void Fail(const std::string& reason) { Live()->Fail(reason); }
  void Close() { r_.reset(); }
  // (source, next_fn) addresses for the op SparktfFeedNext (tf_feed_source.h).
  nb::tuple TfSource() {
    Live();
    if (!tf_source_) tf_source_ = new TfFeedSource{r_};  // never freed: see TfFeedSource
    return nb::make_tuple(reinterpret_cast<uintptr_t>(tf_source_),
                          reinterpret_cast<uintptr_t>(&TfFeedNext));
  }
  nb::dict Progress() {
    const FeedProgress p = Live()->progress();
    nb::dict d;
    d["delivered"] = p.delivered;
    d["consumed"] = p.consumed;
    d["dropped"] = p.dropped;
    d["closed"] = p.closed;
    d["finished"] = p.finished;
    d["producers_lost"] = p.producers_lost;
    d["duplicates"] = p.duplicates;
    d["in_place"] = p.in_place;
    d["copied"] = p.copied;
    d["evictions"] = p.evictions;
    d["batches"] = p.batches;
    d["wait_us"] = p.wait_us;
    return d;
  }

 private:
  FeedReader* Live() {
    if (!r_) throw StatusError(Status::InvalidArgument("the feed is closed"));
    return r_.get();
  }
  std::shared_ptr<FeedReader> r_;
  TfFeedSource* tf_source_ = nullptr;
};

FeedTarget Target(const std::string& cluster_id, int executor_id, const std::string& host, int port,
                  bool prefer_local) {
  FeedTarget t;
  t.cluster_id = cluster_id;
  t.executor_id = executor_id;
  t.address = {host, port};
  t.prefer_local = prefer_local;
  return t;
}

// A feeding task's session to its partition's node (node::OpenPartitionSession). Its
// methods' errors are the session's own; `context` names the partition and node.
class PyFeedSession {
 public:
  PyFeedSession(const std::string& job_json, int64_t partition, bool inference) {
    Result<node::PartitionSession> s = Status::Internal("unset");
    {
      nb::gil_scoped_release release;
      s = [&]() -> Result<node::PartitionSession> {
        ASSIGN_OR_RETURN(node::FeedJob job, node::FeedJob::Parse(job_json));
        return node::OpenPartitionSession(job, partition, inference);
      }();
    }
    p_ = ValueOrThrow(std::move(s));
  }
  // True when the node had finished reading: nothing can be pushed; skip the rows.
  bool stopped() const { return p_.session == nullptr; }
  int feed_index() const { return p_.target.feed_index; }
  std::string context() const { return p_.Describe(); }
  // False when the consumer stopped reading on purpose: skip the rest.
  bool Push(nb::bytes batch) {
    std::string_view b(batch.c_str(), batch.size());
    FeedSession& session = Session();
    Status st;
    {
      nb::gil_scoped_release release;
      st = session.Push(b);
    }
    if (st.code() == StatusCode::kCancelled) return false;
    ThrowIfError(st);
    return true;
  }
  // Pushes the rows of a RowBatcher (see Push).
  bool PushRows(nb::handle batcher) {
    FeedSession& session = Session();
    Status st = PushRowBatch(batcher, [&session](feed::MessageParts batch) {
      nb::gil_scoped_release release;
      return session.Push(batch);
    });
    if (st.code() == StatusCode::kCancelled) return false;
    ThrowIfError(st);
    return true;
  }
  // Pushes an Arrow record batch as feed batches of about 1 MiB, converted in
  // C++ (arrow_feed.h); returns the rows pushed, fewer than the batch's when
  // the consumer stopped reading (skip the rest). The GIL is released throughout.
  uint64_t PushArrow(nb::handle batch) {
    ArrowBatchView view(batch);
    Session();  // throws when there is none
    if (!arrow_) arrow_ = std::make_unique<feed::ArrowFeeder>();
    uint64_t pushed = 0;
    Status st;
    {
      nb::gil_scoped_release release;
      st = p_.PushArrow(*arrow_, view.schema(), view.array(), &pushed);
    }
    if (st.code() != StatusCode::kCancelled) ThrowIfError(st);
    return pushed;
  }
  // A consumer that stopped reading is not an error (over TCP the agent may tell it only
  // now, after rows that were pushed to it were skipped there).
  void Finish() {
    FeedSession& session = Session();
    Status st;
    {
      nb::gil_scoped_release release;
      st = session.Finish();
    }
    if (st.code() != StatusCode::kCancelled) ThrowIfError(st);
  }
  nb::list Results() {
    nb::list out;
    for (const auto& r : Session().TakeResults()) out.append(ToBytes(r));
    return out;
  }
  bool local() const { return p_.session && p_.session->local(); }
  uint64_t rows_pushed() const { return p_.session ? p_.session->rows_pushed() : 0; }
  void Close() { p_.session.reset(); }

 private:
  // The open session, with the GIL held; an error once stopped or closed.
  FeedSession& Session() {
    if (!p_.session) {
      ThrowIfError(Status::InvalidArgument(p_.Describe() + ": the session is stopped or closed"));
    }
    return *p_.session;
  }

  node::PartitionSession p_;  // its session is null once stopped or closed
  std::unique_ptr<feed::ArrowFeeder> arrow_;  // a DataFrame's columns keep their shapes
};

}  // namespace

void InitFeedService(nb::module_& m) {
  nb::class_<PyFeedReader>(m, "FeedReader")
      .def(nb::init<const std::string&, size_t, const std::string&, const std::string&, int,
                    const std::string&, int>(),
           nb::arg("ring_name"), nb::arg("capacity"), nb::arg("coordinator") = "",
           nb::arg("token") = "", nb::arg("executor_id") = 0, nb::arg("queue") = "input",
           nb::arg("generation") = 0)
      .def("next_columns", &PyFeedReader::NextColumns, nb::arg("n"), nb::arg("exact"),
           nb::arg("timeout"), nb::arg("row_arrays") = false)
      .def("push_results", &PyFeedReader::PushResults, nb::arg("batch"), nb::arg("timeout"))
      .def("peek_schema", &PyFeedReader::PeekSchema, nb::arg("timeout"))
      .def("terminate", &PyFeedReader::Terminate)
      .def("fail", &PyFeedReader::Fail, nb::arg("reason"))
      .def("close", &PyFeedReader::Close)
      .def("tf_source", &PyFeedReader::TfSource)
      .def("progress", &PyFeedReader::Progress);

  nb::class_<PyFeedSession>(m, "FeedSession")
      .def(nb::init<const std::string&, int64_t, bool>(), nb::arg("job"), nb::arg("partition"),
           nb::arg("inference"))
      .def_prop_ro("stopped", &PyFeedSession::stopped)
      .def_prop_ro("feed_index", &PyFeedSession::feed_index)
      .def_prop_ro("context", &PyFeedSession::context)
      .def("push", &PyFeedSession::Push, nb::arg("batch"))
      .def("push_rows", &PyFeedSession::PushRows, nb::arg("batcher"))
      .def("push_arrow", &PyFeedSession::PushArrow, nb::arg("batch"))
      .def("finish", &PyFeedSession::Finish)
      .def("results", &PyFeedSession::Results)
      .def("close", &PyFeedSession::Close)
      .def_prop_ro("local", &PyFeedSession::local)
      .def_prop_ro("rows_pushed", &PyFeedSession::rows_pushed);

  m.def("close_feed", [](const std::string& cluster_id, int executor_id, const std::string& host,
                         int port, const std::string& token, const std::string& queue,
                         double timeout) {
    Status st;
    {
      nb::gil_scoped_release release;
      st = node::CloseFeed(Target(cluster_id, executor_id, host, port, false), token, queue,
                           Ms(timeout));
    }
    ThrowIfError(st);
  }, nb::arg("cluster_id"), nb::arg("executor_id"), nb::arg("host"), nb::arg("port"),
        nb::arg("token"), nb::arg("queue"), nb::arg("timeout"));

  m.def("feed_ring_name", [](const std::string& cluster_id, int executor_id,
                             const std::string& queue) {
    return ValueOrThrow(node::FeedRingName(cluster_id, executor_id, queue));
  }, nb::arg("cluster_id"), nb::arg("executor_id"), nb::arg("queue"));
}

}  // namespace sparktf::python
