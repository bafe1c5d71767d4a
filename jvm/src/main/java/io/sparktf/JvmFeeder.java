package io.sparktf;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.spark.SparkContext;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.PartitionPruningRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.columnar.CachedBatch;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.arrow.ArrowWriter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

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
   * "partition pushed skipped local node cached stored yielded" (local 1 or 0, node its feed
   * index, cached 1 when the rows were read from Spark's in-memory cache by CachedColumns,
   * stored 1 when from the block that stores them, 0 when through the cache's lineage,
   * yielded 1 when the task's thread fed at SCHED_BATCH, NativeFeed.yielded).
   */
  @SuppressWarnings("unchecked")
  public static String feed(Object dataset, String jobJson, int maxRows, String timeZone)
      throws ReflectiveOperationException {
    // Through reflection: the classic Dataset of Spark 4 and the Dataset of Spark 3 both
    // have these, in different classes.
    Object plan = dataset.getClass().getMethod("queryExecution").invoke(dataset);
    StructType schema = (StructType) dataset.getClass().getMethod("schema").invoke(dataset);
    CachedColumns cached = null;
    if (PrimitiveBatch.supports(schema)) {
      Object executed = plan.getClass().getMethod("executedPlan").invoke(plan);
      if (executed instanceof SparkPlan) cached = CachedColumns.of((SparkPlan) executed, schema);
    }
    List<String> lines;
    if (cached != null) {
      lines = feedCached(cached, jobJson, schema, maxRows);
    } else {
      RDD<InternalRow> rows = (RDD<InternalRow>) plan.getClass().getMethod("toRdd").invoke(plan);
      lines = runTasks(rows, new FeedPartition(jobJson, schema, maxRows, timeZone));
    }
    return String.join("\n", lines);
  }

  /**
   * Feeds a cached DataFrame: each partition by a task that reads the block storing its
   * cached batches by the block's id, where the block is, so that tasks carry none of the
   * cache's lineage; then the partitions whose block no executor stored any more (evicted,
   * unpersisted) through the cache's lineage, which makes and stores them again. A
   * partition's feed opens only once its batches are there, so none is fed twice.
   */
  private static List<String> feedCached(CachedColumns cached, String jobJson, StructType schema,
                                         int maxRows) {
    SparkContext sc = cached.batches.context();
    RDD<Integer> partitions = sc.makeRDD(
        CollectionConverters.asScala(cached.blockLocations()).toList(),
        ClassTag$.MODULE$.apply(Integer.class));
    List<String> lines = new ArrayList<>();
    Set<Integer> missing = new HashSet<>();
    for (String line : runTasks(partitions,
                                new FeedStoredPartition(jobJson, schema, maxRows, cached))) {
      if (line.startsWith(FeedStoredPartition.MISSING)) {
        missing.add(Integer.parseInt(line.substring(FeedStoredPartition.MISSING.length())));
      } else {
        lines.add(line);
      }
    }
    if (missing.isEmpty()) return lines;
    int[] partitionOf = missing.stream().mapToInt(Integer::intValue).sorted().toArray();
    // serialized with the RDD into the tasks
    scala.Function1<Object, Object> isMissing =
        (scala.Function1<Object, Object> & java.io.Serializable) p -> missing.contains(p);
    RDD<CachedBatch> pruned = PartitionPruningRDD.create(cached.batches, isMissing);
    lines.addAll(runTasks(pruned,
        new FeedCachedPartition(jobJson, schema, maxRows, cached, partitionOf)));
    return lines;
  }

  /**
   * Runs `task` on every partition of `rdd`; returns the lines of the tasks, partition by
   * partition. Through SparkContext.runJob with named function classes, not JavaRDD's
   * mapPartitions and collect: their Scala closures go through Spark's ClosureCleaner, which
   * reads class files with ASM on every job, and compiling that code kept the driver's JIT
   * busy through many epochs, on the cores training runs on (bench/RESULTS.md).
   */
  static <T> List<String> runTasks(RDD<T> rdd, FeedTask<T> task) {
    int n = rdd.getNumPartitions();
    String[][] results = new String[n][];
    List<Object> indices = new ArrayList<>(n);
    for (int i = 0; i < n; ++i) indices.add(i);
    rdd.context().runJob(rdd, task, CollectionConverters.asScala(indices).toList(),
        new CollectResults(results), ClassTag$.MODULE$.apply(String[].class));
    List<String> lines = new ArrayList<>();
    for (String[] r : results) Collections.addAll(lines, r);
    return lines;
  }

  /** A feeding task: a partition's values in, its lines out (runTasks). */
  abstract static class FeedTask<T>
      extends AbstractFunction2<TaskContext, scala.collection.Iterator<T>, String[]>
      implements java.io.Serializable {
    private static final long serialVersionUID = 1L;

    abstract List<String> run(int partition, Iterator<T> values);

    @Override
    public final String[] apply(TaskContext context, scala.collection.Iterator<T> values) {
      return run(context.partitionId(), CollectionConverters.asJava(values))
          .toArray(new String[0]);
    }
  }

  /** On the driver: a task's lines into their partition's slot. */
  private static final class CollectResults extends AbstractFunction2<Object, String[], BoxedUnit> {
    private final String[][] results;

    CollectResults(String[][] results) {
      this.results = results;
    }

    @Override
    public BoxedUnit apply(Object partition, String[] lines) {
      results[(Integer) partition] = lines;
      return BoxedUnit.UNIT;
    }
  }

  /**
   * One partition's feed: rows written into a batch, pushed to the partition's node at
   * maxRows rows or TARGET_BYTES; once a consumer stopped reading, rows are counted as
   * skipped instead. Not thread-safe; opened and closed on the task's thread, whose
   * scheduling policy the feed sets while it lives (NativeFeed.yielded).
   */
  static final class PartitionFeed implements AutoCloseable {
    final BatchWriter batch;
    private final int partition;
    private final int maxRows;
    private final long handle;
    private final BufferAllocator allocator;
    private long pushed = 0;
    private long skipped = 0;
    private boolean stopped;

    PartitionFeed(String jobJson, int partition, StructType schema, int maxRows,
                  String timeZone) {
      NativeFeed.load();
      this.partition = partition;
      this.maxRows = maxRows;
      this.handle = NativeFeed.open(jobJson, partition);
      BufferAllocator a = null;
      BatchWriter b = null;
      try {
        a = ArrowUtils.rootAllocator()
            .newChildAllocator("sparktf feed of partition " + partition, 0, Long.MAX_VALUE);
        b = PrimitiveBatch.supports(schema) ? new PrimitiveBatch(schema, a, maxRows)
                                            : new SparkArrowBatch(schema, timeZone, a);
      } catch (RuntimeException e) {
        if (a != null) a.close();
        NativeFeed.close(handle);
        throw e;
      }
      this.allocator = a;
      this.batch = b;
      this.stopped = NativeFeed.stopped(handle);
    }

    /** Whether a consumer stopped reading: the rows left are to be skipped. */
    boolean stopped() {
      return stopped;
    }

    void skip(long rows) {
      skipped += rows;
    }

    /** After a row was written into `batch`: pushes it when full. */
    void wrote() {
      int n = batch.rows();
      if (n >= maxRows || ((n & 63) == 0 && batch.bytes() >= TARGET_BYTES)) push();
    }

    /** Pushes what is left and ends the feed; returns the partition's line. */
    String finish(boolean cached, boolean stored) {
      if (batch.rows() > 0 && !stopped) push();
      NativeFeed.finish(handle);
      return partition + " " + pushed + " " + skipped + " " + (NativeFeed.local(handle) ? 1 : 0)
          + " " + NativeFeed.feedIndex(handle) + " " + (cached ? 1 : 0) + " " + (stored ? 1 : 0)
          + " " + (NativeFeed.yielded(handle) ? 1 : 0);
    }

    private void push() {
      int n = batch.rows();
      Description d = batch.describe();
      long p = NativeFeed.push(handle, d.formats.toArray(new String[0]),
          d.names.toArray(new String[0]), toArray(d.nodes), toArray(d.buffers));
      batch.reset();
      pushed += p;
      skipped += n - p;
      stopped = NativeFeed.stopped(handle);
    }

    private static long[] toArray(List<Long> values) {
      long[] out = new long[values.size()];
      for (int i = 0; i < out.length; ++i) out[i] = values.get(i);
      return out;
    }

    @Override
    public void close() {
      try {
        batch.close();
        allocator.close();
      } finally {
        NativeFeed.close(handle);
      }
    }
  }

  /** The feeding task of a partition's rows. */
  static final class FeedPartition extends FeedTask<InternalRow> {
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
    List<String> run(int partition, Iterator<InternalRow> rows) {
      try (PartitionFeed feed = new PartitionFeed(jobJson, partition, schema, maxRows, timeZone)) {
        while (rows.hasNext()) {
          InternalRow row = rows.next();
          if (feed.stopped()) {
            feed.skip(1);
            continue;
          }
          feed.batch.write(row);
          feed.wrote();
        }
        return Collections.singletonList(feed.finish(false, false));
      }
    }
  }

  /** A feeding task over a cached DataFrame's batches (CachedColumns). */
  abstract static class CachedFeedTask<T> extends FeedTask<T> {
    private static final long serialVersionUID = 1L;
    private final String jobJson;
    private final StructType schema;
    private final int maxRows;
    final CachedColumns columns;

    CachedFeedTask(String jobJson, StructType schema, int maxRows, CachedColumns columns) {
      this.jobJson = jobJson;
      this.schema = schema;
      this.maxRows = Math.max(1, maxRows);
      this.columns = columns;
    }

    /** Feeds `partition`'s cached batches; returns its line (`stored`: as feed() says). */
    String feed(int partition, Iterator<CachedBatch> batches, boolean stored) {
      CachedColumns.Reader reader = columns.new Reader();
      try (PartitionFeed feed = new PartitionFeed(jobJson, partition, schema, maxRows, null)) {
        PrimitiveBatch batch = (PrimitiveBatch) feed.batch;
        while (batches.hasNext()) {
          CachedBatch cached = batches.next();
          if (feed.stopped()) {
            feed.skip(cached.numRows());
            continue;
          }
          int n = reader.open(cached);
          for (int r = 0; r < n; ++r) {
            if (feed.stopped()) {
              feed.skip(n - r);
              break;
            }
            reader.writeNext(batch);
            feed.wrote();
          }
        }
        return feed.finish(true, stored);
      } finally {
        reader.close();
      }
    }
  }

  /**
   * The feeding task of cached partitions read from their stored blocks
   * (CachedColumns.storedBatches): one element per partition, its index. A partition whose
   * block is gone gets the line MISSING + index, and nothing of it is fed.
   */
  static final class FeedStoredPartition extends CachedFeedTask<Integer> {
    private static final long serialVersionUID = 1L;
    static final String MISSING = "missing ";

    FeedStoredPartition(String jobJson, StructType schema, int maxRows, CachedColumns columns) {
      super(jobJson, schema, maxRows, columns);
    }

    @Override
    List<String> run(int task, Iterator<Integer> partitions) {
      List<String> lines = new ArrayList<>();
      while (partitions.hasNext()) {
        int partition = partitions.next();
        Iterator<CachedBatch> batches = columns.storedBatches(partition);
        lines.add(batches == null ? MISSING + partition : feed(partition, batches, true));
      }
      return lines;
    }
  }

  /**
   * The feeding task of a cached partition's batches through the cache's lineage (the
   * cache RDD, or a PartitionPruningRDD of it whose partition i is the cache's
   * partitionOf[i]).
   */
  static final class FeedCachedPartition extends CachedFeedTask<CachedBatch> {
    private static final long serialVersionUID = 1L;
    private final int[] partitionOf;

    FeedCachedPartition(String jobJson, StructType schema, int maxRows, CachedColumns columns,
                        int[] partitionOf) {
      super(jobJson, schema, maxRows, columns);
      this.partitionOf = partitionOf;
    }

    @Override
    List<String> run(int index, Iterator<CachedBatch> batches) {
      return Collections.singletonList(feed(partitionOf[index], batches, false));
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
