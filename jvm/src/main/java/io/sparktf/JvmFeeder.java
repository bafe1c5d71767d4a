package io.sparktf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.arrow.ArrowWriter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;

/**
 * The JVM feeder of cluster.train(df, feeder="jvm"): a Spark job whose tasks write their
 * partition's rows into Arrow vectors in the executor JVM (Spark's own ArrowWriter, as
 * mapInArrow does before it sends them to a Python worker) and hand each record batch's
 * buffers to the native core, which converts them (docs/formats/feed.md, "Arrow record
 * batches") and pushes them to the partition's node: no Python worker in the data path.
 */
public final class JvmFeeder {
  /** An Arrow batch is handed over at this many bytes, or at maxRows rows. */
  static final long TARGET_BYTES = 8L << 20;

  private JvmFeeder() {}

  /**
   * Feeds every partition of `dataset` (a DataFrame, as PySpark's df._jdf) to the nodes of
   * `jobJson` (TFCluster._feed_meta as JSON). Returns one line per partition:
   * "partition pushed skipped local node" (local 1 or 0, node its feed index).
   */
  @SuppressWarnings("unchecked")
  public static String feed(Object dataset, String jobJson, int maxRows, String timeZone)
      throws ReflectiveOperationException {
    // Through reflection: the classic Dataset of Spark 4 and the Dataset of Spark 3 both
    // have these, in different classes.
    Object plan = dataset.getClass().getMethod("queryExecution").invoke(dataset);
    RDD<InternalRow> rows = (RDD<InternalRow>) plan.getClass().getMethod("toRdd").invoke(plan);
    StructType schema = (StructType) dataset.getClass().getMethod("schema").invoke(dataset);
    List<String> lines = rows.toJavaRDD()
        .mapPartitionsWithIndex(new FeedPartition(jobJson, schema, maxRows, timeZone), false)
        .collect();
    return String.join("\n", lines);
  }

  static final class FeedPartition
      implements Function2<Integer, Iterator<InternalRow>, Iterator<String>> {
    private static final long serialVersionUID = 1L;
    private final String jobJson;
    private final StructType schema;
    private final int maxRows;
    private final String timeZone;

    FeedPartition(String jobJson, StructType schema, int maxRows, String timeZone) {
      this.jobJson = jobJson;
      this.schema = schema;
      this.maxRows = Math.max(1, maxRows);
      this.timeZone = timeZone;
    }

    @Override
    public Iterator<String> call(Integer partition, Iterator<InternalRow> rows) {
      NativeFeed.load();
      long handle = NativeFeed.open(jobJson, partition);
      long pushed = 0;
      long skipped = 0;
      try (BufferAllocator allocator = ArrowUtils.rootAllocator()
               .newChildAllocator("sparktf feed of partition " + partition, 0, Long.MAX_VALUE);
           BatchWriter batch = PrimitiveBatch.supports(schema)
               ? new PrimitiveBatch(schema, allocator, maxRows)
               : new SparkArrowBatch(schema, timeZone, allocator)) {
        boolean stopped = NativeFeed.stopped(handle);
        while (rows.hasNext()) {
          InternalRow row = rows.next();
          if (stopped) {
            ++skipped;
            continue;
          }
          batch.write(row);
          int n = batch.rows();
          if (n >= maxRows || ((n & 63) == 0 && batch.bytes() >= TARGET_BYTES)) {
            long p = push(handle, batch);
            pushed += p;
            skipped += n - p;
            stopped = NativeFeed.stopped(handle);
          }
        }
        int n = batch.rows();
        if (n > 0 && !stopped) {
          long p = push(handle, batch);
          pushed += p;
          skipped += n - p;
        }
        NativeFeed.finish(handle);
        String line = partition + " " + pushed + " " + skipped + " "
            + (NativeFeed.local(handle) ? 1 : 0) + " " + NativeFeed.feedIndex(handle);
        return Collections.singletonList(line).iterator();
      } finally {
        NativeFeed.close(handle);
      }
    }

    private static long push(long handle, BatchWriter batch) {
      Description d = batch.describe();
      long p = NativeFeed.push(handle, d.formats.toArray(new String[0]),
          d.names.toArray(new String[0]), toArray(d.nodes), toArray(d.buffers));
      batch.reset();
      return p;
    }

    private static long[] toArray(List<Long> values) {
      long[] out = new long[values.size()];
      for (int i = 0; i < out.length; ++i) out[i] = values.get(i);
      return out;
    }
  }

  /** A record batch being written from a partition's rows. */
  interface BatchWriter extends AutoCloseable {
    void write(InternalRow row);

    int rows();

    /** About how many bytes the values written take. */
    long bytes();

    /** The batch as NativeFeed.push takes it (valid until reset). */
    Description describe();

    void reset();

    @Override
    void close();
  }

  /** Any schema, through Spark's own ArrowWriter (as mapInArrow writes batches). */
  static final class SparkArrowBatch implements BatchWriter {
    private final VectorSchemaRoot root;
    private final ArrowWriter writer;
    private int rows = 0;

    SparkArrowBatch(StructType schema, String timeZone, BufferAllocator allocator) {
      root = VectorSchemaRoot.create(ArrowUtils.toArrowSchema(schema, timeZone, true), allocator);
      writer = ArrowWriter.create(root);
    }

    @Override
    public void write(InternalRow row) {
      writer.write(row);
      ++rows;
    }

    @Override
    public int rows() {
      return rows;
    }

    @Override
    public long bytes() {
      return writer.sizeInBytes();
    }

    @Override
    public Description describe() {
      writer.finish();
      Description d = new Description();
      d.add("+s", "", root.getRowCount(), 0, new long[] {0}, root.getFieldVectors().size());
      for (FieldVector v : root.getFieldVectors()) d.describe(v);
      return d;
    }

    @Override
    public void reset() {
      writer.reset();
      rows = 0;
    }

    @Override
    public void close() {
      root.close();
    }
  }

  /**
   * A record batch's Arrow tree in preorder, as NativeFeed.push takes it: per vector its
   * C data interface format and name; its length, null count, buffer and child counts;
   * its buffers' addresses (validity first, as the C data interface orders them).
   */
  static final class Description {
    final List<String> formats = new ArrayList<>();
    final List<String> names = new ArrayList<>();
    final List<Long> nodes = new ArrayList<>();
    final List<Long> buffers = new ArrayList<>();

    void add(String format, String name, long length, long nulls, long[] addresses,
             int children) {
      formats.add(format);
      names.add(name);
      nodes.add(length);
      nodes.add(nulls);
      nodes.add((long) addresses.length);
      nodes.add((long) children);
      for (long a : addresses) buffers.add(a);
    }

    void describe(FieldVector v) {
      List<ArrowBuf> bufs = v.getFieldBuffers();
      long[] addresses = new long[bufs.size()];
      for (int i = 0; i < addresses.length; ++i) addresses[i] = bufs.get(i).memoryAddress();
      List<FieldVector> children = v.getChildrenFromFields();
      add(format(v.getField().getType()), v.getName(), v.getValueCount(), v.getNullCount(),
          addresses, children.size());
      for (FieldVector c : children) describe(c);
    }

    /** The C data interface's format string of `type` ("?name" for one it has none for). */
    static String format(ArrowType type) {
      switch (type.getTypeID()) {
        case FloatingPoint:
          switch (((ArrowType.FloatingPoint) type).getPrecision()) {
            case HALF: return "e";
            case SINGLE: return "f";
            default: return "g";
          }
        case Int: {
          ArrowType.Int t = (ArrowType.Int) type;
          String codes = t.getIsSigned() ? "csil" : "CSIL";
          int i = Integer.numberOfTrailingZeros(t.getBitWidth()) - 3;
          return i >= 0 && i < 4 ? String.valueOf(codes.charAt(i)) : "?int" + t.getBitWidth();
        }
        case Bool: return "b";
        case Utf8: return "u";
        case LargeUtf8: return "U";
        case Binary: return "z";
        case LargeBinary: return "Z";
        case List: return "+l";
        case LargeList: return "+L";
        case FixedSizeList: return "+w:" + ((ArrowType.FixedSizeList) type).getListSize();
        case Struct: return "+s";
        case Map: return "+m";
        case Null: return "n";
        case Date: return "td" + (((ArrowType.Date) type).getUnit().name().equals("DAY") ? "D" : "m");
        case Timestamp: {
          ArrowType.Timestamp t = (ArrowType.Timestamp) type;
          String tz = t.getTimezone() == null ? "" : t.getTimezone();
          return "ts" + t.getUnit().name().substring(0, 1).toLowerCase() + ":" + tz;
        }
        case Decimal: {
          ArrowType.Decimal t = (ArrowType.Decimal) type;
          return "d:" + t.getPrecision() + "," + t.getScale();
        }
        default: return "?" + type.getTypeID().name();
      }
    }
  }
}
