// libFuzzer target: ArrowFeeder on Arrow record batches built from the input.
// The batches keep the C data interface's contract on buffer sizes (a buffer
// is as long as the array's offset + length says, a string's data as long as
// its last offset); everything the feeder must check is left to the input:
// formats (unsupported ones too), lengths, offsets, null counts and bitmaps,
// list offsets that decrease or run past their values, fixed-size lists with
// too few values, ragged lists, shapes that change between batches.
// Whatever is refused, a batch the feeder returns must decode, every column
// holding every row, and Feed must push every row of a batch it accepts.
//
// Input: a width byte and a type byte per column, then per record batch (two
// are fed to one feeder) its length, offsets and buffer contents.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparktf/feed/arrow_feed.h"

namespace {
using namespace sparktf;
using namespace sparktf::feed;

struct Input {
  std::string_view rest;
  uint8_t Byte() {
    if (rest.empty()) return 0;
    const uint8_t b = static_cast<uint8_t>(rest[0]);
    rest.remove_prefix(1);
    return b;
  }
  // n bytes: from the input while it lasts, then zeros.
  std::string Bytes(size_t n) {
    const size_t k = std::min(n, rest.size());
    std::string out(rest.substr(0, k));
    rest.remove_prefix(k);
    out.resize(n, '\0');
    return out;
  }
};

// A column's type: list levels (outermost first) around a leaf format.
struct Type {
  std::vector<std::string> levels;  // "+l", "+L" or "+w:N"
  std::string leaf;
};

Type TypeOf(uint8_t t, uint8_t u) {
  static const char* kLeaves[] = {"f", "g", "i", "l", "C", "c", "s", "S", "I", "b",
                                  "u", "U", "z", "Z", "tsu:", "d:5,2", "n", "e"};
  Type type;
  type.leaf = kLeaves[t % 18];
  for (int level = 0; level < (t / 18) % 4; ++level) {
    const uint8_t k = (u >> (2 * level)) & 3;
    type.levels.push_back(k == 0 ? "+l" : k == 1 ? "+L" : "+w:" + std::to_string(k - 1));
  }
  return type;
}

size_t ItemBytes(std::string_view f) {
  if (f == "g" || f == "l") return 8;
  if (f == "f" || f == "i" || f == "I") return 4;
  if (f == "s" || f == "S" || f == "e") return 2;
  if (f == "C" || f == "c") return 1;
  if (f == "tsu:") return 8;
  if (f == "d:5,2") return 16;
  return 0;
}

// Owns every buffer and struct of the batches it builds.
class Builder {
 public:
  explicit Builder(Input* in) : in_(in) {}

  // The array of `length` values (after an offset from the input) of the
  // type's levels from `level` on.
  ArrowArray* Array(const Type& type, size_t level, int64_t length) {
    const int64_t offset = in_->Byte() % 4;
    const auto slots = static_cast<size_t>(offset + length);
    ArrowArray* a = NewArray(length, offset);
    const uint8_t nulls = in_->Byte();
    if (nulls % 4 == 0) {  // a validity bitmap from the input, and a null count
      Buffer(a, in_->Bytes((slots + 7) / 8));
      a->null_count = nulls / 4 % 3 == 0 ? -1 : nulls / 4;
    } else {
      Buffer(a, std::nullopt);
    }
    if (level < type.levels.size()) {
      const std::string& f = type.levels[level];
      int64_t values = 0;
      if (f[1] == 'w') {
        values = static_cast<int64_t>(slots) * std::stoi(f.substr(3));
      } else {
        values = Offsets(a, slots, f == "+L");
      }
      values = std::max<int64_t>(0, values - (in_->Byte() % 8 == 0 ? 1 : 0));  // sometimes short
      Child(a, Array(type, level + 1, std::min<int64_t>(values, 1024)));
      return a;
    }
    const std::string& f = type.leaf;
    if (f == "b") {
      Buffer(a, in_->Bytes((slots + 7) / 8));
    } else if (f == "u" || f == "U" || f == "z" || f == "Z") {
      const int64_t bytes = Offsets(a, slots, f == "U" || f == "Z");
      Buffer(a, in_->Bytes(static_cast<size_t>(std::max<int64_t>(bytes, 0))));
    } else if (f != "n") {
      Buffer(a, in_->Bytes(slots * ItemBytes(f)));
    }
    return a;
  }

  // The schema of the type's levels from `level` on.
  ArrowSchema* Schema(const Type& type, size_t level, const std::string& name) {
    ArrowSchema* s = &schemas_.emplace_back();
    const std::string& f = level < type.levels.size() ? type.levels[level] : type.leaf;
    s->format = strings_.emplace_back(f).c_str();
    s->name = strings_.emplace_back(name).c_str();
    if (level < type.levels.size()) {
      auto& kids = schema_children_.emplace_back(1, Schema(type, level + 1, "item"));
      s->n_children = 1;
      s->children = kids.data();
    }
    s->release = [](ArrowSchema*) {};
    return s;
  }

  ArrowArray* NewArray(int64_t length, int64_t offset) {
    ArrowArray* a = &arrays_.emplace_back();
    a->length = length;
    a->offset = offset;
    a->release = [](ArrowArray*) {};
    buffer_lists_.emplace_back();
    child_lists_.emplace_back();
    index_.push_back(a);
    return a;
  }

  void Buffer(ArrowArray* a, std::optional<std::string> bytes) {
    auto& list = buffer_lists_[Index(a)];
    list.push_back(bytes ? buffers_.emplace_back(std::move(*bytes)).data() : nullptr);
    a->n_buffers = static_cast<int64_t>(list.size());
    a->buffers = list.data();
  }

  void Child(ArrowArray* a, ArrowArray* child) {
    auto& list = child_lists_[Index(a)];
    list.push_back(child);
    a->n_children = static_cast<int64_t>(list.size());
    a->children = list.data();
  }

 private:
  // Offsets for `slots` values: a start and steps from the input (a step of
  // 0xff goes back by one); returns the last offset.
  int64_t Offsets(ArrowArray* a, size_t slots, bool wide) {
    std::vector<int64_t> o(slots + 1);
    o[0] = in_->Byte() % 4;
    for (size_t i = 1; i <= slots; ++i) {
      const uint8_t step = in_->Byte();
      o[i] = o[i - 1] + (step == 0xff ? -1 : step % 5);
    }
    std::string bytes;
    if (wide) {
      bytes.assign(reinterpret_cast<const char*>(o.data()), o.size() * 8);
    } else {
      for (int64_t v : o) {
        const auto x = static_cast<int32_t>(v);
        bytes.append(reinterpret_cast<const char*>(&x), 4);
      }
    }
    Buffer(a, std::move(bytes));
    int64_t last = 0;
    for (int64_t v : o) last = std::max(last, v);
    return last;
  }

  size_t Index(const ArrowArray* a) const {
    for (size_t i = 0; i < index_.size(); ++i) {
      if (index_[i] == a) return i;
    }
    __builtin_trap();
  }

  Input* in_;
  std::deque<ArrowSchema> schemas_;
  std::deque<ArrowArray> arrays_;
  std::deque<std::string> strings_, buffers_;
  std::deque<std::vector<ArrowSchema*>> schema_children_;
  std::deque<std::vector<const void*>> buffer_lists_;
  std::deque<std::vector<ArrowArray*>> child_lists_;
  std::vector<const ArrowArray*> index_;
};

void CheckDecodes(std::string_view encoded, uint64_t rows, size_t width) {
  uint64_t decoded_rows = 0;
  std::vector<ColumnView> columns;
  if (!DecodeBatch(encoded, &decoded_rows, &columns).ok()) __builtin_trap();
  if (decoded_rows != rows || columns.size() != width) __builtin_trap();
  for (const ColumnView& c : columns) {
    if (c.dims.empty() || c.dims[0] != rows) __builtin_trap();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{std::string_view(reinterpret_cast<const char*>(data), size)};
  const size_t width = in.Byte() % 5;
  std::vector<Type> types;
  for (size_t c = 0; c < width; ++c) {
    const uint8_t t = in.Byte();
    types.push_back(TypeOf(t, in.Byte()));
  }
  Builder build(&in);
  ArrowSchema* schema = build.Schema(Type{{}, "+s"}, 0, "");
  std::vector<ArrowSchema*> columns;
  for (size_t c = 0; c < width; ++c) {
    columns.push_back(build.Schema(types[c], 0, "c" + std::to_string(c)));
  }
  schema->n_children = static_cast<int64_t>(width);
  schema->children = columns.data();

  ArrowFeeder feeder(/*target_bytes=*/64, /*first_rows=*/3, /*max_rows=*/16);
  for (int b = 0; b < 2; ++b) {
    const int64_t length = in.Byte() % 40;
    ArrowArray* batch = build.NewArray(length, 0);
    build.Buffer(batch, std::nullopt);
    for (size_t c = 0; c < width; ++c) {
      // A column of the batch's length, sometimes shorter (the feeder must notice).
      const int64_t short_by = in.Byte() % 16 == 0 ? 1 : 0;
      build.Child(batch, build.Array(types[c], 0, std::max<int64_t>(length - short_by, 0)));
    }
    if (length > 0) {
      const int64_t begin = in.Byte() % length;
      std::string encoded;
      if (feeder.Encode(*schema, *batch, begin, length - begin, &encoded).ok()) {
        CheckDecodes(encoded, static_cast<uint64_t>(length - begin), width);
      }
    }
    uint64_t pushed = 0;
    const Status fed = feeder.Feed(
        *schema, *batch,
        [&](MessageParts parts, uint64_t rows) {
          std::string message;
          for (std::string_view p : parts) message.append(p);
          CheckDecodes(message, rows, width);
          return Status::OK();
        },
        &pushed);
    if (fed.ok() && pushed != static_cast<uint64_t>(length)) __builtin_trap();
    if (!fed.ok() && pushed >= static_cast<uint64_t>(std::max<int64_t>(length, 1))) {
      __builtin_trap();  // an error leaves rows unpushed
    }
  }
  return 0;
}
