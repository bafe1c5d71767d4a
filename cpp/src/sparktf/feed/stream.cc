#include "sparktf/feed/stream.h"

#include <cstring>
#include <nlohmann/json.hpp>

namespace sparktf::feed {
namespace {

using json = nlohmann::json;

uint64_t InnerValues(const ColumnView& c) {
  uint64_t n = 1;
  for (size_t i = 1; i < c.dims.size(); ++i) n *= c.dims[i];
  return n;
}

std::string Describe(const ColumnView& c) {
  std::string s = c.name + ": " + std::string(ColumnTypeName(c.type)) + "[";
  for (size_t i = 1; i < c.dims.size(); ++i) s += (i > 1 ? "," : "") + std::to_string(c.dims[i]);
  return s + "]";
}

bool SameColumn(const ColumnView& a, const ColumnView& b) {
  return a.name == b.name && a.type == b.type && a.dims.size() == b.dims.size() &&
         std::equal(a.dims.begin() + 1, a.dims.end(), b.dims.begin() + 1);
}

uint64_t Offset(const ColumnView& c, uint64_t i) {
  uint64_t v;
  std::memcpy(&v, c.data.data() + i * 8, 8);
  return v;
}

}  // namespace

std::string EncodeMarker(const Marker& m) {
  const char* kind = m.kind == Marker::kBegin ? "begin" : m.kind == Marker::kEnd ? "end" : "abort";
  json j = {{"kind", kind}, {"partition", m.partition}};
  if (m.kind == Marker::kBegin) j["result_ring"] = m.result_ring;
  if (m.kind == Marker::kEnd) j["rows"] = m.rows;
  std::string out(4, '\0');
  std::memcpy(out.data(), &kMarkerMagic, 4);
  return out + j.dump();
}

bool IsMarker(std::string_view message) {
  uint32_t magic = 0;
  if (message.size() < 4) return false;
  std::memcpy(&magic, message.data(), 4);
  return magic == kMarkerMagic;
}

Result<Marker> DecodeMarker(std::string_view message) {
  if (!IsMarker(message)) return Status::InvalidArgument("not a feed marker");
  json j = json::parse(message.substr(4), nullptr, false);
  if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string() ||
      !j.contains("partition") || !j["partition"].is_number_integer()) {
    return Status::InvalidArgument("malformed feed marker");
  }
  Marker m;
  m.partition = j["partition"].get<int64_t>();
  const std::string kind = j["kind"].get<std::string>();
  if (kind == "begin" && j.contains("result_ring") && j["result_ring"].is_string()) {
    m.kind = Marker::kBegin;
    m.result_ring = j["result_ring"].get<std::string>();
  } else if (kind == "end" && j.contains("rows") && j["rows"].is_number_unsigned()) {
    m.kind = Marker::kEnd;
    m.rows = j["rows"].get<uint64_t>();
  } else if (kind == "abort") {
    m.kind = Marker::kAbort;
  } else {
    return Status::InvalidArgument("malformed feed marker");
  }
  return m;
}

std::string EncodeTag(const BatchTag& tag) {
  std::string out(kTagSize, '\0');
  std::memcpy(out.data(), &kTagMagic, 4);
  std::memcpy(out.data() + 8, &tag.feed, 8);
  std::memcpy(out.data() + 16, &tag.partition, 8);
  std::memcpy(out.data() + 24, &tag.first_row, 8);
  return out;
}

bool IsTagged(std::string_view message) {
  uint32_t magic = 0;
  if (message.size() < 4) return false;
  std::memcpy(&magic, message.data(), 4);
  return magic == kTagMagic;
}

Result<BatchTag> DecodeTag(std::string_view message) {
  uint32_t reserved = 1;
  if (!IsTagged(message) || message.size() < kTagSize) {
    return Status::InvalidArgument("not a tagged feed batch");
  }
  std::memcpy(&reserved, message.data() + 4, 4);
  if (reserved != 0) return Status::InvalidArgument("tagged feed batch: reserved field not 0");
  BatchTag tag;
  std::memcpy(&tag.feed, message.data() + 8, 8);
  std::memcpy(&tag.partition, message.data() + 16, 8);
  std::memcpy(&tag.first_row, message.data() + 24, 8);
  return tag;
}

Status ClassifyConsumerStop(Status st) {
  if (st.code() == StatusCode::kAborted &&
      st.message().find(kConsumerDoneReason) != std::string::npos) {
    return Status::Cancelled(st.message());
  }
  return st;
}

size_t BatchStart(std::string_view message) { return IsTagged(message) ? kTagSize : 0; }

Result<uint64_t> BatchRows(std::string_view message) {
  uint32_t magic = 0;
  uint64_t rows = 0;
  if (message.size() < 16) return Status::InvalidArgument("feed batch shorter than its header");
  std::memcpy(&magic, message.data(), 4);
  if (magic != kBatchMagic) return Status::InvalidArgument("not a feed batch");
  std::memcpy(&rows, message.data() + 8, 8);
  return rows;
}

Status BatchAssembler::Add(std::shared_ptr<const std::string> message, size_t skip_bytes,
                           uint64_t skip_rows) {
  if (skip_bytes > message->size()) return Status::InvalidArgument("feed batch shorter than its tag");
  const std::string_view batch = std::string_view(*message).substr(skip_bytes);
  return Add(std::shared_ptr<const void>(std::move(message)), batch, skip_rows);
}

Status BatchAssembler::Add(std::shared_ptr<const void> owner, std::string_view message,
                           uint64_t skip_rows) {
  Chunk c;
  c.data = std::move(owner);
  RETURN_NOT_OK(DecodeBatch(message, &c.rows, &c.columns));
  if (skip_rows > c.rows) {
    return Status::InvalidArgument("cannot skip " + std::to_string(skip_rows) +
                                   " rows of a feed batch of " + std::to_string(c.rows));
  }
  c.offset = skip_rows;
  if (schema_.empty()) {
    for (const auto& col : c.columns) {
      ColumnView s = col;
      s.data = {};
      schema_.push_back(std::move(s));
    }
  } else {
    bool same = schema_.size() == c.columns.size();
    for (size_t i = 0; same && i < schema_.size(); ++i) same = SameColumn(schema_[i], c.columns[i]);
    if (!same) {
      std::string was, now;
      for (const auto& s : schema_) was += (was.empty() ? "" : ", ") + Describe(s);
      for (const auto& s : c.columns) now += (now.empty() ? "" : ", ") + Describe(s);
      return Status::InvalidArgument("feed batches disagree: columns were (" + was + "), now (" +
                                     now + "); every row fed must have the same structure");
    }
  }
  if (c.rows == c.offset) return Status::OK();
  rows_ += c.rows - c.offset;
  chunks_.push_back(std::move(c));
  return Status::OK();
}

uint64_t BatchAssembler::Clear() {
  const uint64_t n = rows_;
  chunks_.clear();
  rows_ = 0;
  return n;
}

namespace {

// Rows [begin, end) of one decoded batch.
struct Piece {
  const std::vector<ColumnView>* columns;
  uint64_t begin, end;
};

size_t PadPayload(uint64_t n) { return (n + kPayloadAlign - 1) & ~uint64_t{kPayloadAlign - 1}; }

// The pieces' rows, in order, as one encoded batch with `schema`'s columns
// (one copy of each row), into *out. With `aligned`, the batch starts at the first
// kPayloadAlign-aligned byte of out->data(), after *lead zero bytes; otherwise at 0.
Status Assemble(const std::vector<ColumnView>& schema, const std::vector<Piece>& pieces,
                std::string* out, bool aligned = false, size_t* lead = nullptr) {
  uint64_t n = 0;
  for (const Piece& p : pieces) n += p.end - p.begin;
  std::vector<ColumnView> views(schema.size());
  std::vector<uint64_t> sizes(schema.size());
  std::vector<std::string> bytes_payloads(schema.size());  // bytes columns, built aside
  for (size_t k = 0; k < schema.size(); ++k) {
    const ColumnView& s = schema[k];
    views[k] = s;
    views[k].dims[0] = n;
    // Marked only if every piece's column is: rows of lists among arrays come
    // back as lists, bytes among text as bytes.
    for (const Piece& p : pieces) {
      views[k].row_arrays = views[k].row_arrays && (*p.columns)[k].row_arrays;
      views[k].text = views[k].text && (*p.columns)[k].text;
    }
    const uint64_t inner = InnerValues(s);
    if (s.type != ColumnType::kBytes) {
      sizes[k] = n * inner * ItemSize(s.type);
      continue;
    }
    std::vector<uint64_t> offsets{0};
    std::string bytes;
    for (const Piece& p : pieces) {
      const ColumnView& c = (*p.columns)[k];
      const uint64_t values = NumValues(c.dims);
      const char* data = c.data.data() + (values + 1) * 8;
      const uint64_t first = Offset(c, p.begin * inner);
      const uint64_t last = Offset(c, p.end * inner);
      for (uint64_t i = p.begin * inner + 1; i <= p.end * inner; ++i) {
        offsets.push_back(bytes.size() + Offset(c, i) - first);
      }
      bytes.append(data + first, last - first);
    }
    std::string& buf = bytes_payloads[k];
    buf.resize(offsets.size() * 8);
    std::memcpy(buf.data(), offsets.data(), buf.size());
    buf += bytes;
    sizes[k] = buf.size();
  }
  // Header, then every payload copied straight into place (one copy per row).
  size_t total = 0;
  for (uint64_t z : sizes) total += PadPayload(z);
  out->clear();
  out->reserve(EncodedBatchSize(views) + total + (aligned ? kPayloadAlign : 0));
  const size_t start =
      aligned ? (kPayloadAlign - reinterpret_cast<uintptr_t>(out->data()) % kPayloadAlign) %
                    kPayloadAlign
              : 0;
  out->assign(start, '\0');  // within the reserved capacity: data() does not move
  if (lead) *lead = start;
  RETURN_NOT_OK(EncodeBatchHeader(views, n, sizes, out));
  size_t at = out->size();
  out->resize(at + total);
  char* dst = out->data();
  for (size_t k = 0; k < schema.size(); ++k) {
    const ColumnView& s = schema[k];
    const size_t padded = PadPayload(sizes[k]);
    if (s.type == ColumnType::kBytes) {
      std::memcpy(dst + at, bytes_payloads[k].data(), sizes[k]);
    } else {
      const uint64_t row_bytes = InnerValues(s) * ItemSize(s.type);
      size_t off = at;
      for (const Piece& p : pieces) {
        const size_t len = (p.end - p.begin) * row_bytes;
        if (len > 0) std::memcpy(dst + off, (*p.columns)[k].data.data() + p.begin * row_bytes, len);
        off += len;
      }
    }
    std::memset(dst + at + sizes[k], 0, padded - sizes[k]);
    at += padded;
  }
  return Status::OK();
}

}  // namespace

std::string_view SliceValues(const BatchSlice& slice, size_t column) {
  const ColumnView& c = slice.columns[column];
  const uint64_t row_bytes = InnerValues(c) * ItemSize(c.type);
  return c.data.substr(slice.first_row * row_bytes, slice.rows * row_bytes);
}

Status EncodeSlice(const BatchSlice& slice, std::string* out) {
  return Assemble(slice.columns, {Piece{&slice.columns, slice.first_row,
                                        slice.first_row + slice.rows}}, out);
}

void BatchAssembler::Advance(uint64_t n) {
  rows_ -= n;
  while (n > 0) {
    Chunk& c = chunks_.front();
    const uint64_t take = std::min(n, c.rows - c.offset);
    c.offset += take;
    n -= take;
    if (c.offset == c.rows) chunks_.pop_front();
  }
}

Status BatchAssembler::TakeSlice(uint64_t n, BatchSlice* out, BufferPool* pool) {
  n = std::min(n, rows_);
  if (n == 0) return Status::InvalidArgument("no rows to take");
  const Chunk& front = chunks_.front();
  if (front.rows - front.offset >= n) {  // in one batch: a view
    out->owner = front.data;
    out->columns = front.columns;
    out->first_row = front.offset;
    out->rows = n;
    Advance(n);
    return Status::OK();
  }
  std::vector<Piece> pieces;
  uint64_t left = n;
  for (const Chunk& c : chunks_) {
    if (left == 0) break;
    const uint64_t take = std::min(left, c.rows - c.offset);
    pieces.push_back({&c.columns, c.offset, c.offset + take});
    left -= take;
  }
  std::shared_ptr<std::string> buffer = pool ? pool->Get() : std::make_shared<std::string>();
  size_t lead = 0;
  RETURN_NOT_OK(Assemble(schema_, pieces, buffer.get(), true, &lead));
  uint64_t rows = 0;
  RETURN_NOT_OK(DecodeBatch(std::string_view(*buffer).substr(lead), &rows, &out->columns));
  out->owner = std::move(buffer);
  out->first_row = 0;
  out->rows = n;
  Advance(n);
  return Status::OK();
}

Status BatchAssembler::Take(uint64_t n, std::string* out) {
  BatchSlice slice;
  RETURN_NOT_OK(TakeSlice(n, &slice));
  return EncodeSlice(slice, out);
}

}  // namespace sparktf::feed
