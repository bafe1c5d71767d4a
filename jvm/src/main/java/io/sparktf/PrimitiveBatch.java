package io.sparktf;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;

/**
 * An Arrow record batch written straight from Spark's rows, for schemas of numbers,
 * booleans and arrays of numbers only: a value is one store, an array held as Spark's
 * UnsafeArrayData one bulk copy (Spark's ArrowWriter, for every other schema, writes array
 * elements one by one). Nulls are kept in validity bitmaps, made at the first, so the core
 * reports them as it does for any Arrow batch. Not thread-safe.
 */
final class PrimitiveBatch implements JvmFeeder.BatchWriter {
  /** Whether every column of `schema` can be written here. */
  static boolean supports(StructType schema) {
    for (StructField f : schema.fields()) {
      DataType t = f.dataType();
      if (t instanceof ArrayType) t = ((ArrayType) t).elementType();
      else if (t instanceof BooleanType || t instanceof ByteType || t instanceof ShortType) continue;
      if (!(t instanceof FloatType || t instanceof DoubleType || t instanceof IntegerType
          || t instanceof LongType)) {
        return false;
      }
    }
    return true;
  }

  /** A growable off-heap buffer of Arrow's allocator. */
  private static final class Buffer {
    final BufferAllocator allocator;
    ArrowBuf buf;

    Buffer(BufferAllocator allocator) {
      this.allocator = allocator;
    }

    long address() {
      return buf == null ? 0 : buf.memoryAddress();
    }

    /** Room for `bytes` bytes, the first `keep` kept. */
    void reserve(long bytes, long keep) {
      if (buf != null && buf.capacity() >= bytes) return;
      ArrowBuf grown = allocator.buffer(Math.max(bytes, buf == null ? 4096 : 2 * buf.capacity()));
      if (buf != null) {
        Platform.copyMemory(null, buf.memoryAddress(), null, grown.memoryAddress(), keep);
        buf.close();
      }
      buf = grown;
    }

    void close() {
      if (buf != null) buf.close();
      buf = null;
    }
  }

  /** Validity bits, all set until the first null. */
  private static final class Validity {
    final Buffer bits;
    long nulls = 0;

    Validity(BufferAllocator allocator) {
      bits = new Buffer(allocator);
    }

    void setNull(long index, long capacity) {
      if (nulls == 0) {  // the first null: every bit so far set
        bits.reserve((capacity + 7) / 8, 0);
        Platform.setMemory(bits.address(), (byte) 0xff, (capacity + 7) / 8);
      }
      long a = bits.address() + (index >> 3);
      Platform.putByte(null, a, (byte) (Platform.getByte(null, a) & ~(1 << (index & 7))));
      ++nulls;
    }

    /** Bits made so far (covering oldCapacity values) now cover `capacity`, set. */
    void extend(long oldCapacity, long capacity) {
      if (nulls == 0) return;
      long had = (oldCapacity + 7) / 8;
      long need = (capacity + 7) / 8;
      bits.reserve(need, had);
      if (need > had) Platform.setMemory(bits.address() + had, (byte) 0xff, need - had);
    }

    long address() {
      return nulls == 0 ? 0 : bits.address();
    }
  }

  private final class Column {
    final String name;
    final int ordinal;
    final boolean array;
    final boolean containsNull;
    final String format;   // of the value, or of an array's elements
    final int width;       // bytes per value; 0: bits (bool)
    final Buffer values = new Buffer(allocator);
    final Buffer offsets = new Buffer(allocator);
    final Validity validity = new Validity(allocator);
    final Validity elementValidity = new Validity(allocator);
    long count = 0;        // values written (elements, for an array)

    Column(StructField f, int ordinal) {
      this.name = f.name();
      this.ordinal = ordinal;
      DataType t = f.dataType();
      this.array = t instanceof ArrayType;
      this.containsNull = array && ((ArrayType) t).containsNull();
      if (array) t = ((ArrayType) t).elementType();
      if (t instanceof FloatType) { format = "f"; width = 4; }
      else if (t instanceof DoubleType) { format = "g"; width = 8; }
      else if (t instanceof IntegerType) { format = "i"; width = 4; }
      else if (t instanceof LongType) { format = "l"; width = 8; }
      else if (t instanceof ShortType) { format = "s"; width = 2; }
      else if (t instanceof ByteType) { format = "c"; width = 1; }
      else { format = "b"; width = 0; }
    }

    /** Row `index`'s value of this column, from `row`. */
    void write(InternalRow row, int index) {
      if (array) writeArray(row.isNullAt(ordinal) ? null : row.getArray(ordinal), index);
      else writeScalar(row, index);
    }

    /** Row `index`'s array (null: a null row). */
    void writeArray(ArrayData a, int index) {
      if (index == 0) {
        offsets.reserve(4L * (rowCapacity + 1), 0);
        Platform.putInt(null, offsets.address(), 0);
      }
      if (a == null) validity.setNull(index, rowCapacity);
      else appendElements(a);
      Platform.putInt(null, offsets.address() + 4L * (index + 1), (int) count);
    }

    /** Row `index`'s value of this (scalar) column, the row's field `ordinal`. */
    void writeScalar(InternalRow row, int index) {
      if (index == 0) values.reserve(width == 0 ? (rowCapacity + 7) / 8 : width * (long) rowCapacity, 0);
      long a = values.address();
      if (row.isNullAt(ordinal)) {
        validity.setNull(index, rowCapacity);
        if (width == 0) Platform.putByte(null, a + (index >> 3), (byte) (Platform.getByte(null, a + (index >> 3)) & ~(1 << (index & 7))));
        return;
      }
      switch (format) {
        case "f": Platform.putFloat(null, a + 4L * index, row.getFloat(ordinal)); break;
        case "g": Platform.putDouble(null, a + 8L * index, row.getDouble(ordinal)); break;
        case "i": Platform.putInt(null, a + 4L * index, row.getInt(ordinal)); break;
        case "l": Platform.putLong(null, a + 8L * index, row.getLong(ordinal)); break;
        case "s": Platform.putShort(null, a + 2L * index, row.getShort(ordinal)); break;
        case "c": Platform.putByte(null, a + index, row.getByte(ordinal)); break;
        default: {
          long at = a + (index >> 3);
          int bit = 1 << (index & 7);
          byte old = (index & 7) == 0 ? 0 : Platform.getByte(null, at);
          Platform.putByte(null, at, (byte) (row.getBoolean(ordinal) ? old | bit : old & ~bit));
        }
      }
      ++count;
    }

    private void appendElements(ArrayData a) {
      int n = a.numElements();
      long old = count;
      values.reserve(width * (count + n), width * count);
      elementValidity.extend(old, count + n);
      long dst = values.address() + width * count;
      if (a instanceof UnsafeArrayData) {  // the elements are contiguous after the header
        UnsafeArrayData u = (UnsafeArrayData) a;
        Platform.copyMemory(u.getBaseObject(),
            u.getBaseOffset() + UnsafeArrayData.calculateHeaderPortionInBytes(n), null, dst,
            (long) width * n);
      } else {
        for (int j = 0; j < n; ++j) {
          if (a.isNullAt(j)) continue;
          switch (format) {
            case "f": Platform.putFloat(null, dst + 4L * j, a.getFloat(j)); break;
            case "g": Platform.putDouble(null, dst + 8L * j, a.getDouble(j)); break;
            case "i": Platform.putInt(null, dst + 4L * j, a.getInt(j)); break;
            default: Platform.putLong(null, dst + 8L * j, a.getLong(j)); break;
          }
        }
      }
      if (containsNull) {
        for (int j = 0; j < n; ++j) {
          if (a.isNullAt(j)) elementValidity.setNull(count + j, count + n);
        }
      }
      count += n;
    }

    long bytes() {
      return width == 0 ? count / 8 : width * count;
    }

    void describe(JvmFeeder.Description d, int rows) {
      if (array) {
        d.add("+l", name, rows, validity.nulls, new long[] {validity.address(), offsets.address()}, 1);
        d.add(format, "element", count, elementValidity.nulls,
              new long[] {elementValidity.address(), values.address()}, 0);
      } else {
        d.add(format, name, rows, validity.nulls, new long[] {validity.address(), values.address()}, 0);
      }
    }

    void reset() {
      count = 0;
      validity.nulls = 0;
      elementValidity.nulls = 0;
    }

    void close() {
      values.close();
      offsets.close();
      validity.bits.close();
      elementValidity.bits.close();
    }
  }

  private final BufferAllocator allocator;
  private final List<Column> columns = new ArrayList<>();
  private final int rowCapacity;
  private int rows = 0;

  PrimitiveBatch(StructType schema, BufferAllocator allocator, int rowCapacity) {
    this.allocator = allocator;
    this.rowCapacity = rowCapacity;
    StructField[] fields = schema.fields();
    for (int i = 0; i < fields.length; ++i) columns.add(new Column(fields[i], i));
  }

  @Override
  public void write(InternalRow row) {
    for (Column c : columns) c.write(row, rows);
    ++rows;
  }

  /**
   * Writes a row whose scalar columns are `scalars`' fields and whose array columns are
   * `arrays` (by column; null: a null row), as CachedColumns reads a cached batch.
   */
  void write(InternalRow scalars, ArrayData[] arrays) {
    for (Column c : columns) {
      if (c.array) c.writeArray(arrays[c.ordinal], rows);
      else c.writeScalar(scalars, rows);
    }
    ++rows;
  }

  @Override
  public int rows() {
    return rows;
  }

  @Override
  public long bytes() {
    long b = 0;
    for (Column c : columns) b += c.bytes();
    return b;
  }

  @Override
  public JvmFeeder.Description describe() {
    JvmFeeder.Description d = new JvmFeeder.Description();
    d.add("+s", "", rows, 0, new long[] {0}, columns.size());
    for (Column c : columns) c.describe(d, rows);
    return d;
  }

  @Override
  public void reset() {
    for (Column c : columns) c.reset();
    rows = 0;
  }

  @Override
  public void close() {
    for (Column c : columns) c.close();
  }
}
