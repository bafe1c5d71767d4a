// TensorFlow op SparktfFeedNext (libsparktf_tf_ops.so, loaded by tf.load_op_library in
// sparktf.node): the next batch of a node's feed as tensors. A column whose rows lie at an
// address aligned as TensorFlow wants (TF_TensorDefaultAlignment; the feed reader places
// batches so that payloads are) becomes a tensor over the feed's buffer, which the tensor
// keeps alive; any other is copied once into its output tensor. It replaces tf.data's
// from_generator in ctx.dataset, whose Python call and numpy conversion cost more than a
// small model's step.
//
// Attributes: source and next_fn (addresses from FeedReader.tf_source(), see
// tf_feed_source.h), batch_size, timeout_ms, dtypes (one per column), row_ranks and
// row_dims (each column's per-row shape, concatenated; for the end's empty outputs).
// Outputs: ok (false at the end of the feed, when every value has 0 rows) and values.
// Only TensorFlow's C API is used; its symbols resolve from the TensorFlow that loads us.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "sparktf/feed/batch.h"
#include "tensorflow/c/kernels.h"
#include "tensorflow/c/ops.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_status.h"
#include "tensorflow/c/tf_tensor.h"
#include "tf_codes.h"
#include "tf_feed_source.h"

namespace sparktf::tfop {
namespace {

using feed::ColumnType;

constexpr char kOpName[] = "SparktfFeedNext";

TF_DataType ToTfType(int32_t type) {
  switch (static_cast<ColumnType>(type)) {
    case ColumnType::kFloat32: return TF_FLOAT;
    case ColumnType::kFloat64: return TF_DOUBLE;
    case ColumnType::kInt32: return TF_INT32;
    case ColumnType::kInt64: return TF_INT64;
    case ColumnType::kUInt8: return TF_UINT8;
    case ColumnType::kBool: return TF_BOOL;
    case ColumnType::kBytes: break;
  }
  return TF_STRING;  // never an output of this op: sparktf.node sends bytes columns elsewhere
}

struct Kernel {
  void* source = nullptr;
  SparktfFeedNextFn next = nullptr;
  int64_t batch_size = 0;
  int64_t timeout_ms = 0;
  std::vector<TF_DataType> dtypes;
  std::vector<std::vector<int64_t>> row_dims;
  size_t alignment = 64;  // TF_TensorDefaultAlignment()
};

template <typename T>
std::vector<T> ListAttr(TF_OpKernelConstruction* ctx, const char* name, TF_Status* status,
                        void (*get)(TF_OpKernelConstruction*, const char*, T*, int, TF_Status*)) {
  int32_t size = 0, total = 0;
  TF_OpKernelConstruction_GetAttrSize(ctx, name, &size, &total, status);
  std::vector<T> out(size > 0 ? size : 0);
  if (TF_GetCode(status) == TF_OK && size > 0) get(ctx, name, out.data(), size, status);
  return out;
}

void* Create(TF_OpKernelConstruction* ctx) {
  auto* k = new Kernel;
  k->alignment = std::max<size_t>(1, TF_TensorDefaultAlignment());
  TF_Status* status = TF_NewStatus();
  int64_t source = 0, next = 0;
  TF_OpKernelConstruction_GetAttrInt64(ctx, "source", &source, status);
  if (TF_GetCode(status) == TF_OK) TF_OpKernelConstruction_GetAttrInt64(ctx, "next_fn", &next, status);
  if (TF_GetCode(status) == TF_OK) {
    TF_OpKernelConstruction_GetAttrInt64(ctx, "batch_size", &k->batch_size, status);
  }
  if (TF_GetCode(status) == TF_OK) {
    TF_OpKernelConstruction_GetAttrInt64(ctx, "timeout_ms", &k->timeout_ms, status);
  }
  if (TF_GetCode(status) == TF_OK) {
    k->dtypes = ListAttr<TF_DataType>(ctx, "dtypes", status, TF_OpKernelConstruction_GetAttrTypeList);
  }
  std::vector<int64_t> ranks, dims;
  if (TF_GetCode(status) == TF_OK) {
    ranks = ListAttr<int64_t>(ctx, "row_ranks", status, TF_OpKernelConstruction_GetAttrInt64List);
  }
  if (TF_GetCode(status) == TF_OK) {
    dims = ListAttr<int64_t>(ctx, "row_dims", status, TF_OpKernelConstruction_GetAttrInt64List);
  }
  if (TF_GetCode(status) == TF_OK) {
    size_t at = 0;
    for (int64_t r : ranks) {
      if (r < 0 || at + static_cast<size_t>(r) > dims.size()) break;
      k->row_dims.emplace_back(dims.begin() + at, dims.begin() + at + r);
      at += r;
    }
    if (k->row_dims.size() != k->dtypes.size() || at != dims.size() || source == 0 || next == 0 ||
        k->batch_size <= 0) {
      TF_SetStatus(status, TF_INVALID_ARGUMENT,
                   "SparktfFeedNext: inconsistent attributes (build it with sparktf.node)");
    }
  }
  k->source = reinterpret_cast<void*>(source);
  k->next = reinterpret_cast<SparktfFeedNextFn>(next);
  if (TF_GetCode(status) != TF_OK) TF_OpKernelConstruction_Failure(ctx, status);
  TF_DeleteStatus(status);
  return k;
}

struct Sink {
  TF_OpKernelContext* ctx;
  const Kernel* kernel;
  TF_Status* status;
  int32_t emitted = 0;
};

// What a tensor over the feed's buffer holds, released when TensorFlow frees it.
struct Held {
  void (*release)(void* held);
  void* held;
};

void ReleaseHeld(void* /*data*/, size_t /*len*/, void* arg) {
  auto* h = static_cast<Held*>(arg);
  h->release(h->held);
  delete h;
}

// Sets output 1 + index to a tensor over the column's data, which it keeps alive.
bool Wrap(Sink* sink, int32_t index, TF_DataType dtype, const std::vector<int64_t>& dims,
          const SparktfFeedColumn* column) {
  auto* held = new Held{column->release, column->hold(column->owner)};
  TF_Tensor* t = TF_NewTensor(dtype, dims.data(), static_cast<int>(dims.size()),
                              const_cast<void*>(column->data), column->bytes, &ReleaseHeld, held);
  if (t == nullptr) {  // TF_NewTensor has already released `held`
    TF_SetStatus(sink->status, TF_INTERNAL, "SparktfFeedNext: a column's size and shape differ");
    return false;
  }
  TF_SetOutput(sink->ctx, 1 + index, t, sink->status);
  TF_DeleteTensor(t);
  return TF_GetCode(sink->status) == TF_OK;
}

// Allocates output 1 + index with dims and copies `bytes` of data into it.
bool Output(Sink* sink, int32_t index, TF_DataType dtype, const std::vector<int64_t>& dims,
            const void* data, size_t bytes) {
  TF_Tensor* t = TF_AllocateOutput(sink->ctx, 1 + index, dtype, dims.data(),
                                   static_cast<int>(dims.size()), bytes, sink->status);
  if (TF_GetCode(sink->status) != TF_OK) return false;
  if (bytes > 0) std::memcpy(TF_TensorData(t), data, bytes);
  TF_DeleteTensor(t);
  return true;
}

void Emit(void* opaque, int32_t index, const SparktfFeedColumn* column) {
  auto* sink = static_cast<Sink*>(opaque);
  if (TF_GetCode(sink->status) != TF_OK) return;
  const Kernel& k = *sink->kernel;
  const TF_DataType dtype = ToTfType(column->type);
  if (index != sink->emitted || index >= static_cast<int32_t>(k.dtypes.size()) ||
      dtype != k.dtypes[index]) {
    TF_SetStatus(sink->status, TF_INVALID_ARGUMENT,
                 ("SparktfFeedNext: column " + std::to_string(index) +
                  " of the feed does not have the type the dataset was made for (a feed's "
                  "columns must not change)").c_str());
    return;
  }
  std::vector<int64_t> dims(column->dims, column->dims + column->rank);
  const bool aligned = reinterpret_cast<uintptr_t>(column->data) % k.alignment == 0;
  if (column->bytes > 0 && aligned ? Wrap(sink, index, dtype, dims, column)
                                   : Output(sink, index, dtype, dims, column->data, column->bytes)) {
    ++sink->emitted;
  }
}

void Compute(void* opaque, TF_OpKernelContext* ctx) {
  const auto* k = static_cast<const Kernel*>(opaque);
  TF_Status* status = TF_NewStatus();
  Sink sink{ctx, k, status};
  char error[1024] = {0};
  const int32_t rc = k->next(k->source, static_cast<uint64_t>(k->batch_size), k->timeout_ms,
                             &sink, &Emit, error, sizeof(error));
  if (rc < 0) {
    TF_SetStatus(status, ToTfCode(static_cast<StatusCode>(-rc)), error);
  } else if (TF_GetCode(status) == TF_OK && rc == 1 &&
             sink.emitted != static_cast<int32_t>(k->dtypes.size())) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT,
                 ("SparktfFeedNext: the feed has " + std::to_string(sink.emitted) +
                  " columns, the dataset was made for " + std::to_string(k->dtypes.size()))
                     .c_str());
  } else if (TF_GetCode(status) == TF_OK && rc == 0) {  // the end: empty values
    for (size_t i = 0; i < k->dtypes.size(); ++i) {
      std::vector<int64_t> dims{0};
      dims.insert(dims.end(), k->row_dims[i].begin(), k->row_dims[i].end());
      if (!Output(&sink, static_cast<int32_t>(i), k->dtypes[i], dims, nullptr, 0)) break;
    }
  }
  if (TF_GetCode(status) == TF_OK) {
    TF_Tensor* ok = TF_AllocateOutput(ctx, 0, TF_BOOL, nullptr, 0, 1, status);
    if (TF_GetCode(status) == TF_OK) {
      *static_cast<bool*>(TF_TensorData(ok)) = rc == 1;
      TF_DeleteTensor(ok);
    }
  }
  if (TF_GetCode(status) != TF_OK) TF_OpKernelContext_Failure(ctx, status);
  TF_DeleteStatus(status);
}

void Delete(void* opaque) { delete static_cast<Kernel*>(opaque); }

void UnknownShapes(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  TF_ShapeInferenceContextSetUnknownShape(ctx, status);
}

bool Register() {
  TF_Status* status = TF_NewStatus();
  TF_OpDefinitionBuilder* op = TF_NewOpDefinitionBuilder(kOpName);
  TF_OpDefinitionBuilderAddAttr(op, "source: int");
  TF_OpDefinitionBuilderAddAttr(op, "next_fn: int");
  TF_OpDefinitionBuilderAddAttr(op, "batch_size: int");
  TF_OpDefinitionBuilderAddAttr(op, "timeout_ms: int");
  TF_OpDefinitionBuilderAddAttr(op, "dtypes: list(type) >= 1");
  TF_OpDefinitionBuilderAddAttr(op, "row_ranks: list(int)");
  TF_OpDefinitionBuilderAddAttr(op, "row_dims: list(int)");
  TF_OpDefinitionBuilderAddOutput(op, "ok: bool");
  TF_OpDefinitionBuilderAddOutput(op, "values: dtypes");
  TF_OpDefinitionBuilderSetIsStateful(op, true);
  TF_OpDefinitionBuilderSetShapeInferenceFunction(op, &UnknownShapes);
  TF_RegisterOpDefinition(op, status);
  if (TF_GetCode(status) == TF_OK) {
    TF_KernelBuilder* kernel = TF_NewKernelBuilder(kOpName, "CPU", &Create, &Compute, &Delete);
    TF_RegisterKernelBuilder(kOpName, kernel, status);
  }
  const bool ok = TF_GetCode(status) == TF_OK;
  TF_DeleteStatus(status);
  return ok;
}

[[maybe_unused]] const bool registered = Register();

}  // namespace
}  // namespace sparktf::tfop
