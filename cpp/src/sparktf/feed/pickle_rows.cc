#include "sparktf/feed/pickle_rows.h"

#include <cstring>
#include <limits>

namespace sparktf::feed {
namespace {

using Kind = PickleValue::Kind;

// The callables numpy's pickles name.
enum Callable : uint64_t { kNumpyDtype = 1, kNumpyFromBuffer = 2 };

Status Malformed(const std::string& what) {
  return Status::InvalidArgument("malformed pickle: " + what);
}
Status Unsupported(const std::string& what) {
  return Status::Unimplemented("pickled " + what + " (read in Python instead)");
}

// Lone surrogates (U+D800..U+DFFF, which pickle writes as 0xED 0xA0..0xBF)
// are not UTF-8; Python refuses to encode them, and so do we.
bool HasSurrogate(std::string_view s) {
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    if (static_cast<unsigned char>(s[i]) == 0xED && (static_cast<unsigned char>(s[i + 1]) & 0xE0) == 0xA0) {
      return true;
    }
  }
  return false;
}

bool DtypeOfCode(std::string_view code, ColumnType* t) {
  if (code == "f4") *t = ColumnType::kFloat32;
  else if (code == "f8") *t = ColumnType::kFloat64;
  else if (code == "i4") *t = ColumnType::kInt32;
  else if (code == "i8") *t = ColumnType::kInt64;
  else if (code == "u1") *t = ColumnType::kUInt8;
  else if (code == "b1") *t = ColumnType::kBool;
  else return false;
  return true;
}

}  // namespace

Status PickledRows::Parse(std::string_view pickle) {
  if (pickle.size() > std::numeric_limits<uint32_t>::max()) return Unsupported("batch over 4 GiB");
  input_ = pickle;
  stack_.clear();
  marks_.clear();
  memo_.clear();
  for (size_t i = 0; i < containers_used_; ++i) containers_[i].clear();
  containers_used_ = 0;
  arrays_.clear();
  dtypes_.clear();
  root_ = PickleValue();
  Status st = Run();
  if (!st.ok()) root_ = PickleValue();  // nothing half-read is reachable
  return st;
}

void PickledRows::NewContainer(Kind kind, size_t from) {
  if (containers_used_ == containers_.size()) containers_.emplace_back();
  std::vector<PickleValue>& c = containers_[containers_used_];
  c.assign(stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
  stack_.resize(from);
  PickleValue v;
  v.kind = kind;
  v.ref = containers_used_++;
  stack_.push_back(v);
}

Status PickledRows::Reduce() {
  if (Available() < 2) return Malformed("REDUCE on a short stack");
  const PickleValue args = stack_.back();
  const PickleValue fn = stack_[stack_.size() - 2];
  stack_.resize(stack_.size() - 2);
  if (fn.kind != Kind::kCallable || args.kind != Kind::kTuple) return Unsupported("object");
  const auto a = Items(args);
  PickleValue out;
  if (fn.ref == kNumpyDtype) {
    ColumnType t;
    if (a.empty() || a[0].kind != Kind::kStr || !DtypeOfCode(Text(a[0]), &t)) {
      return Unsupported("numpy dtype");
    }
    out.kind = Kind::kDtype;
    out.ref = dtypes_.size();
    dtypes_.push_back({t, false});
  } else {  // numpy's _frombuffer(buffer, dtype, shape, order)
    if (a.size() != 4 || (a[0].kind != Kind::kBytes && a[0].kind != Kind::kByteArray) ||
        a[1].kind != Kind::kDtype || a[2].kind != Kind::kTuple || a[3].kind != Kind::kStr) {
      return Unsupported("numpy array");
    }
    const Dtype& dtype = dtypes_[static_cast<size_t>(a[1].ref)];
    if (!dtype.checked || Text(a[3]) != "C") return Unsupported("numpy array (byte order or layout)");
    PickledArray arr{dtype.type, {}, Text(a[0])};
    uint64_t values = 1;
    for (const PickleValue& d : Items(a[2])) {
      if (d.kind != Kind::kInt || d.i < 0) return Malformed("numpy array shape");
      const auto n = static_cast<uint64_t>(d.i);
      if (n != 0 && values > std::numeric_limits<uint64_t>::max() / n) return Malformed("numpy array shape");
      values *= n;
      arr.shape.push_back(n);
    }
    if (arr.shape.empty()) return Unsupported("0-d numpy array");
    if (values > arr.data.size() || values * ItemSize(arr.type) != arr.data.size()) {
      return Malformed("numpy array data does not match its shape");
    }
    out.kind = Kind::kArray;
    out.ref = arrays_.size();
    arrays_.push_back(std::move(arr));
  }
  stack_.push_back(out);
  return Status::OK();
}

Status PickledRows::Build() {
  if (Available() < 2) return Malformed("BUILD on a short stack");
  const PickleValue state = stack_.back();
  stack_.pop_back();
  const PickleValue& obj = stack_.back();
  if (obj.kind != Kind::kDtype || state.kind != Kind::kTuple) return Unsupported("object state");
  // numpy's dtype state: (version, byte order, subarray, names, fields, ...).
  const auto s = Items(state);
  if (s.size() < 5 || s[1].kind != Kind::kStr || s[2].kind != Kind::kNone ||
      s[3].kind != Kind::kNone || s[4].kind != Kind::kNone) {
    return Unsupported("numpy dtype with fields or subarrays");
  }
  const std::string_view order = Text(s[1]);
  if (order != "<" && order != "|" && order != "=") return Unsupported("big-endian numpy dtype");
  dtypes_[static_cast<size_t>(obj.ref)].checked = true;
  return Status::OK();
}

Status PickledRows::Run() {
  size_t pos = 0;
  const size_t size = input_.size();
  auto need = [&](uint64_t n) { return n <= size - pos; };
  // An unsigned little-endian integer of n bytes at pos (little-endian host).
  auto read_le = [&](size_t n) {
    uint64_t v = 0;
    switch (n) {
      case 1: v = static_cast<unsigned char>(input_[pos]); break;
      case 2: { uint16_t x; std::memcpy(&x, input_.data() + pos, 2); v = x; break; }
      case 4: { uint32_t x; std::memcpy(&x, input_.data() + pos, 4); v = x; break; }
      case 8: std::memcpy(&v, input_.data() + pos, 8); break;
      default: std::memcpy(&v, input_.data() + pos, n);
    }
    pos += n;
    return v;
  };
  auto push = [&](Kind kind, uint64_t ref, uint32_t len = 0) {
    PickleValue v;
    v.kind = kind;
    v.ref = ref;
    v.len = len;
    stack_.push_back(v);
  };
  auto push_int = [&](Kind kind, int64_t i) {  // kInt, kBool
    PickleValue v;
    v.kind = kind;
    v.i = i;
    stack_.push_back(v);
  };
  // A string or bytes value of `n` bytes at pos.
  auto push_text = [&](Kind kind, uint64_t n) -> Status {
    if (!need(n)) return Malformed("truncated string");
    if (kind == Kind::kStr && HasSurrogate(input_.substr(pos, static_cast<size_t>(n)))) {
      return Unsupported("str with lone surrogates");
    }
    push(kind, pos, static_cast<uint32_t>(n));  // n < input size < 4 GiB
    pos += static_cast<size_t>(n);
    return Status::OK();
  };
  // A value whose length, of `width` bytes, comes first.
  auto push_sized = [&](Kind kind, size_t width) -> Status {
    if (!need(width)) return Malformed("truncated length");
    return push_text(kind, read_le(width));
  };
  auto pop_mark = [&](size_t* from) -> Status {
    if (marks_.empty()) return Malformed("no MARK");
    *from = marks_.back();
    marks_.pop_back();
    if (*from > stack_.size()) return Malformed("MARK past the stack");
    return Status::OK();
  };
  auto extend_list = [&](size_t from) -> Status {
    if (from == 0) return Malformed("APPENDS without a list");
    const PickleValue& list = stack_[from - 1];
    if (list.kind != Kind::kList) return Unsupported("append to a non-list");
    auto& items = containers_[static_cast<size_t>(list.ref)];
    items.insert(items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
    stack_.resize(from);
    return Status::OK();
  };

  while (pos < size) {
    const auto op = static_cast<unsigned char>(input_[pos++]);
    switch (op) {
      case 0x80:  // PROTO
        if (!need(1)) return Malformed("truncated PROTO");
        if (static_cast<unsigned char>(input_[pos]) < 2 || static_cast<unsigned char>(input_[pos]) > 5) {
          return Unsupported("pickle protocol " + std::to_string(static_cast<unsigned char>(input_[pos])));
        }
        ++pos;
        break;
      case 0x95:  // FRAME: a length to skip; the opcodes follow inline
        if (!need(8)) return Malformed("truncated FRAME");
        pos += 8;
        break;
      case '.': {  // STOP
        if (stack_.size() != 1 || !marks_.empty()) return Malformed("STOP with a stack of " + std::to_string(stack_.size()));
        if (stack_[0].kind != Kind::kList) return Unsupported("batch that is not a list");
        root_ = stack_[0];
        if (pos != size) return Malformed("bytes after STOP");
        return Status::OK();
      }
      case '(':  // MARK
        marks_.push_back(stack_.size());
        break;
      case ']':  // EMPTY_LIST
        NewContainer(Kind::kList, stack_.size());
        break;
      case ')':  // EMPTY_TUPLE
        NewContainer(Kind::kTuple, stack_.size());
        break;
      case 'l':    // LIST
      case 't': {  // TUPLE
        size_t from;
        RETURN_NOT_OK(pop_mark(&from));
        NewContainer(op == 'l' ? Kind::kList : Kind::kTuple, from);
        break;
      }
      case 0x85:  // TUPLE1
      case 0x86:  // TUPLE2
      case 0x87: {  // TUPLE3
        const size_t n = op - 0x84u;
        if (Available() < n) return Malformed("TUPLE on a short stack");
        NewContainer(Kind::kTuple, stack_.size() - n);
        break;
      }
      case 'a': {  // APPEND
        if (Available() < 2) return Malformed("APPEND on a short stack");
        RETURN_NOT_OK(extend_list(stack_.size() - 1));
        break;
      }
      case 'e': {  // APPENDS
        size_t from;
        RETURN_NOT_OK(pop_mark(&from));
        if (!marks_.empty() && marks_.back() >= from) return Malformed("APPENDS across a MARK");
        RETURN_NOT_OK(extend_list(from));
        break;
      }
      case 'N':  // NONE
        push(Kind::kNone, 0);
        break;
      case 0x88:  // NEWTRUE
      case 0x89:  // NEWFALSE
        push_int(Kind::kBool, op == 0x88 ? 1 : 0);
        break;
      case 'J':  // BININT: signed 4 bytes
        if (!need(4)) return Malformed("truncated BININT");
        push_int(Kind::kInt, static_cast<int32_t>(read_le(4)));
        break;
      case 'K':  // BININT1
        if (!need(1)) return Malformed("truncated BININT1");
        push_int(Kind::kInt, static_cast<int64_t>(read_le(1)));
        break;
      case 'M':  // BININT2
        if (!need(2)) return Malformed("truncated BININT2");
        push_int(Kind::kInt, static_cast<int64_t>(read_le(2)));
        break;
      case 0x8a: {  // LONG1: n bytes, two's complement little-endian
        if (!need(1)) return Malformed("truncated LONG1");
        const size_t n = static_cast<unsigned char>(input_[pos++]);
        if (!need(n)) return Malformed("truncated LONG1");
        if (n > 8) return Unsupported("int beyond 64 bits");
        uint64_t v = read_le(n);
        if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);  // sign
        push_int(Kind::kInt, static_cast<int64_t>(v));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian double; lists of floats are runs of them
        size_t n = 1;
        while (9 * n < size - pos + 1 && input_[pos - 1 + 9 * n] == 'G') ++n;
        if (!need(9 * n - 1)) return Malformed("truncated BINFLOAT");
        const size_t at = stack_.size();
        stack_.resize(at + n);
        const char* in = input_.data() + pos;
        for (size_t k = 0; k < n; ++k, in += 9) {
          uint64_t bits;
          std::memcpy(&bits, in, 8);
          bits = __builtin_bswap64(bits);
          PickleValue& v = stack_[at + k];
          v.kind = Kind::kFloat;
          std::memcpy(&v.f, &bits, 8);
        }
        pos += 9 * n - 1;
        break;
      }
      // str, bytes and bytearray: a length of 1, 4 or 8 bytes, then the data
      case 0x8c: RETURN_NOT_OK(push_sized(Kind::kStr, 1)); break;        // SHORT_BINUNICODE
      case 'X': RETURN_NOT_OK(push_sized(Kind::kStr, 4)); break;         // BINUNICODE
      case 0x8d: RETURN_NOT_OK(push_sized(Kind::kStr, 8)); break;        // BINUNICODE8
      case 'C': RETURN_NOT_OK(push_sized(Kind::kBytes, 1)); break;       // SHORT_BINBYTES
      case 'B': RETURN_NOT_OK(push_sized(Kind::kBytes, 4)); break;       // BINBYTES
      case 0x8e: RETURN_NOT_OK(push_sized(Kind::kBytes, 8)); break;      // BINBYTES8
      case 0x96: RETURN_NOT_OK(push_sized(Kind::kByteArray, 8)); break;  // BYTEARRAY8
      case 0x94:  // MEMOIZE
        if (Available() < 1) return Malformed("MEMOIZE on an empty stack");
        memo_.push_back(stack_.back());
        break;
      case 'q':    // BINPUT
      case 'r': {  // LONG_BINPUT
        const size_t n = op == 'q' ? 1 : 4;
        if (!need(n) || Available() < 1) return Malformed("bad PUT");
        const uint64_t at = read_le(n);
        if (at > memo_.size() + 1024) return Unsupported("sparse memo");
        if (at >= memo_.size()) memo_.resize(static_cast<size_t>(at) + 1);
        memo_[static_cast<size_t>(at)] = stack_.back();
        break;
      }
      case 'h':    // BINGET
      case 'j': {  // LONG_BINGET
        const size_t n = op == 'h' ? 1 : 4;
        if (!need(n)) return Malformed("truncated GET");
        const uint64_t at = read_le(n);
        if (at >= memo_.size()) return Malformed("GET of an unknown memo entry");
        stack_.push_back(memo_[static_cast<size_t>(at)]);
        break;
      }
      case 0x93:    // STACK_GLOBAL
      case 'c': {   // GLOBAL: "module\nname\n"
        std::string_view module, name;
        if (op == 0x93) {
          if (Available() < 2 || stack_.back().kind != Kind::kStr ||
              stack_[stack_.size() - 2].kind != Kind::kStr) {
            return Malformed("STACK_GLOBAL without two strings");
          }
          name = Text(stack_.back());
          module = Text(stack_[stack_.size() - 2]);
          stack_.resize(stack_.size() - 2);
        } else {
          const size_t a = input_.find('\n', pos);
          const size_t b = a == std::string_view::npos ? a : input_.find('\n', a + 1);
          if (b == std::string_view::npos) return Malformed("truncated GLOBAL");
          module = input_.substr(pos, a - pos);
          name = input_.substr(a + 1, b - a - 1);
          pos = b + 1;
        }
        uint64_t which;
        if (module == "numpy" && name == "dtype") {
          which = kNumpyDtype;
        } else if ((module == "numpy._core.numeric" || module == "numpy.core.numeric") &&
                   name == "_frombuffer") {
          which = kNumpyFromBuffer;
        } else {
          return Unsupported(std::string(module) + "." + std::string(name));
        }
        push(Kind::kCallable, which);
        break;
      }
      case 'R':  // REDUCE
        RETURN_NOT_OK(Reduce());
        break;
      case 'b':  // BUILD
        RETURN_NOT_OK(Build());
        break;
      default:
        return Unsupported("opcode " + std::to_string(op));
    }
  }
  return Malformed("no STOP");
}

}  // namespace sparktf::feed
