// libsparktf_jni: the JVM feeder's native side (io.sparktf.NativeFeed). It adapts
// Java arguments only: a DataFrame partition's Arrow vectors, described by their
// buffer addresses, become Arrow C data interface structs that the core's
// ArrowPartitionFeed (sparktf/node/feed_task.h) pushes to the partition's node.
// Errors are thrown as io.sparktf.SparktfException("<StatusCode>: <message>").
#include <jni.h>

#include <memory>
#include <string>
#include <vector>

#include "sparktf/node/feed_task.h"

namespace {

using sparktf::Status;
using sparktf::node::ArrowPartitionFeed;
using sparktf::node::FeedJob;

void Throw(JNIEnv* env, const Status& st) {
  if (env->ExceptionCheck()) return;
  jclass cls = env->FindClass("io/sparktf/SparktfException");
  if (cls) env->ThrowNew(cls, st.ToString().c_str());
}

std::string JavaString(JNIEnv* env, jstring s) {
  if (!s) return {};
  const char* chars = env->GetStringUTFChars(s, nullptr);
  std::string out(chars ? chars : "");
  if (chars) env->ReleaseStringUTFChars(s, chars);
  return out;
}

void NoRelease(ArrowSchema* s) { s->release = nullptr; }
void NoRelease(ArrowArray* a) { a->release = nullptr; }

// A record batch's Arrow tree rebuilt from its preorder description (NativeFeed.push):
// per node, its format and name, 4 longs (length, null count, buffer count, child
// count) and its buffers' addresses. The memory stays Java's; nothing is released.
class ArrowTree {
 public:
  Status Build(JNIEnv* env, jobjectArray formats, jobjectArray names, jlongArray nodes,
               jlongArray buffers) {
    const jsize n = env->GetArrayLength(formats);
    if (n < 1 || env->GetArrayLength(names) != n || env->GetArrayLength(nodes) != 4 * n) {
      return Status::InvalidArgument("NativeFeed.push: inconsistent Arrow description");
    }
    for (jsize i = 0; i < n; ++i) {
      formats_.push_back(JavaString(env, static_cast<jstring>(env->GetObjectArrayElement(formats, i))));
      names_.push_back(JavaString(env, static_cast<jstring>(env->GetObjectArrayElement(names, i))));
    }
    nodes_.resize(static_cast<size_t>(4 * n));
    env->GetLongArrayRegion(nodes, 0, 4 * n, nodes_.data());
    const jsize nb = env->GetArrayLength(buffers);
    std::vector<jlong> addresses(static_cast<size_t>(nb));
    env->GetLongArrayRegion(buffers, 0, nb, addresses.data());
    for (jlong a : addresses) buffers_.push_back(reinterpret_cast<const void*>(a));
    schemas_.resize(static_cast<size_t>(n));
    arrays_.resize(static_cast<size_t>(n));
    schema_children_.resize(static_cast<size_t>(n));
    array_children_.resize(static_cast<size_t>(n));
    size_t next = 0, next_buffer = 0;
    if (!Node(&next, &next_buffer) || next != static_cast<size_t>(n) ||
        next_buffer != buffers_.size()) {
      return Status::InvalidArgument("NativeFeed.push: inconsistent Arrow description");
    }
    return Status::OK();
  }
  const ArrowSchema& schema() const { return schemas_[0]; }
  const ArrowArray& array() const { return arrays_[0]; }

 private:
  // Fills node *next and its subtree; false if the description runs out.
  bool Node(size_t* next, size_t* next_buffer) {
    const size_t i = (*next)++;
    if (i >= schemas_.size()) return false;
    const jlong* d = &nodes_[4 * i];
    const auto n_buffers = static_cast<size_t>(d[2]);
    const auto n_children = static_cast<size_t>(d[3]);
    if (d[2] < 0 || d[3] < 0 || *next_buffer + n_buffers > buffers_.size()) return false;
    ArrowSchema& s = schemas_[i];
    ArrowArray& a = arrays_[i];
    s = ArrowSchema{formats_[i].c_str(), names_[i].c_str(), nullptr, 0, d[3], nullptr,
                    nullptr, &NoRelease, nullptr};
    a = ArrowArray{d[0], d[1], 0, d[2], d[3], buffers_.data() + *next_buffer, nullptr,
                   nullptr, &NoRelease, nullptr};
    *next_buffer += n_buffers;
    for (size_t c = 0; c < n_children; ++c) {
      const size_t child = *next;
      if (!Node(next, next_buffer)) return false;
      schema_children_[i].push_back(&schemas_[child]);
      array_children_[i].push_back(&arrays_[child]);
    }
    s.children = schema_children_[i].data();
    a.children = array_children_[i].data();
    return true;
  }

  std::vector<std::string> formats_, names_;
  std::vector<jlong> nodes_;
  std::vector<const void*> buffers_;
  std::vector<ArrowSchema> schemas_;  // sized once: children point into them
  std::vector<ArrowArray> arrays_;
  std::vector<std::vector<ArrowSchema*>> schema_children_;
  std::vector<std::vector<ArrowArray*>> array_children_;
};

ArrowPartitionFeed* Feed(jlong handle) { return reinterpret_cast<ArrowPartitionFeed*>(handle); }

}  // namespace

extern "C" {

// The partition's feed to its node (chosen now), or 0 with an exception.
JNIEXPORT jlong JNICALL Java_io_sparktf_NativeFeed_open(JNIEnv* env, jclass, jstring job_json,
                                                       jint partition) {
  auto job = FeedJob::Parse(JavaString(env, job_json));
  if (!job.ok()) {
    Throw(env, job.status());
    return 0;
  }
  auto feed = ArrowPartitionFeed::Open(*job, partition);
  if (!feed.ok()) {
    Throw(env, feed.status());
    return 0;
  }
  return reinterpret_cast<jlong>(feed->release());
}

// Pushes one record batch; returns the rows pushed (fewer once the node stopped reading).
JNIEXPORT jlong JNICALL Java_io_sparktf_NativeFeed_push(JNIEnv* env, jclass, jlong handle,
                                                       jobjectArray formats, jobjectArray names,
                                                       jlongArray nodes, jlongArray buffers) {
  ArrowTree tree;
  Status st = tree.Build(env, formats, names, nodes, buffers);
  if (!st.ok()) {
    Throw(env, st);
    return 0;
  }
  auto pushed = Feed(handle)->Push(tree.schema(), tree.array());
  if (!pushed.ok()) {
    Throw(env, pushed.status());
    return 0;
  }
  return static_cast<jlong>(*pushed);
}

JNIEXPORT void JNICALL Java_io_sparktf_NativeFeed_finish(JNIEnv* env, jclass, jlong handle) {
  const Status st = Feed(handle)->Finish();
  if (!st.ok()) Throw(env, st);
}

JNIEXPORT jboolean JNICALL Java_io_sparktf_NativeFeed_stopped(JNIEnv*, jclass, jlong handle) {
  return Feed(handle)->stopped();
}

JNIEXPORT jboolean JNICALL Java_io_sparktf_NativeFeed_local(JNIEnv*, jclass, jlong handle) {
  return Feed(handle)->local();
}

JNIEXPORT jint JNICALL Java_io_sparktf_NativeFeed_feedIndex(JNIEnv*, jclass, jlong handle) {
  return Feed(handle)->feed_index();
}

JNIEXPORT jboolean JNICALL Java_io_sparktf_NativeFeed_yielded(JNIEnv*, jclass, jlong handle) {
  return Feed(handle)->yielded();
}

JNIEXPORT void JNICALL Java_io_sparktf_NativeFeed_close(JNIEnv*, jclass, jlong handle) {
  delete Feed(handle);
}

}  // extern "C"
