package io.sparktf;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkEnv;
import org.apache.spark.rdd.RDD;
import org.apache.spark.scheduler.ExecutorCacheTaskLocation;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.UnsafeArrayData;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.columnar.CachedBatch;
import org.apache.spark.sql.execution.ColumnarToRowExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.columnar.ColumnAccessor$;
import org.apache.spark.sql.execution.columnar.DefaultCachedBatch;
import org.apache.spark.sql.execution.columnar.DefaultCachedBatchSerializer;
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec;
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.storage.BlockId;
import org.apache.spark.storage.BlockManagerId;
import org.apache.spark.storage.BlockResult;
import org.apache.spark.storage.RDDBlockId;
import org.apache.spark.unsafe.Platform;
import scala.Option;
import scala.Tuple2;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag$;

/**
 * A cached DataFrame (df.cache() or persist(), Spark's default cache format) read straight
 * from its stored column buffers, for the schemas PrimitiveBatch writes. Spark's own scan
 * of the cache decodes every row into an UnsafeRow, its arrays copied once more on the way;
 * here a scalar column is decompressed by Spark's ColumnAccessor into a column vector, a
 * batch at a time, and an array is read where the cache keeps it (the UnsafeArrayData
 * bytes), then copied once into the Arrow batch.
 *
 * <p>The layout read is that of Spark's ComplexColumnBuilder (not compressed, native byte
 * order): the null count, the nulls' row positions (ints), then per non-null row the
 * array's size in bytes (an int) and its UnsafeArrayData bytes.
 */
final class CachedColumns implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The cache's batches: the scan's partitions, one to one. */
  final transient RDD<CachedBatch> batches;
  /** The id of `batches`, whose blocks (RDDBlockId) hold the cached batches. */
  private final int rddId;
  /** Per column of the DataFrame, its buffer in a cached batch. */
  private final int[] bufferIndex;
  private final DataType[] types;

  private CachedColumns(RDD<CachedBatch> batches, int[] bufferIndex, DataType[] types) {
    this.batches = batches;
    this.rddId = batches.id();
    this.bufferIndex = bufferIndex;
    this.types = types;
  }

  /**
   * The cached columns behind `plan` (a DataFrame's executed plan, of `schema`), or null
   * unless the plan is a bare scan of an in-memory cache (no filter, no projection beyond
   * choosing columns) stored by Spark's default serializer. Null too when this Spark's
   * classes differ from those the jar was built against, so the caller reads rows instead.
   */
  static CachedColumns of(SparkPlan plan, StructType schema) {
    try {
      if (plan instanceof ColumnarToRowExec) plan = ((ColumnarToRowExec) plan).child();
      if (!(plan instanceof InMemoryTableScanExec)) return null;
      InMemoryTableScanExec scan = (InMemoryTableScanExec) plan;
      if (!scan.predicates().isEmpty()) return null;
      if (!(scan.relation().cacheBuilder().serializer() instanceof DefaultCachedBatchSerializer)) {
        return null;
      }
      scala.collection.immutable.Seq<Attribute> cached = scan.relation().output();
      scala.collection.immutable.Seq<Attribute> read = scan.attributes();
      if (read.size() != schema.fields().length) return null;
      int[] index = new int[read.size()];
      DataType[] types = new DataType[read.size()];
      for (int i = 0; i < index.length; ++i) {
        Attribute a = read.apply(i);
        index[i] = -1;
        for (int j = 0; j < cached.size(); ++j) {
          if (cached.apply(j).exprId().equals(a.exprId())) index[i] = j;
        }
        types[i] = a.dataType();
        if (index[i] < 0 || !types[i].equals(schema.fields()[i].dataType())) return null;
      }
      return new CachedColumns(scan.baseCacheRDD(), index, types);
    } catch (LinkageError e) {  // another Spark's classes: its rows are read instead
      return null;
    }
  }

  /**
   * Per partition of the cache (driver side): its index and the task locations
   * ("executor_HOST_ID") of the executors that store its block, none for a block stored
   * nowhere. For SparkContext.makeRDD: tasks over these carry no lineage of the cache (its
   * plan, serialized into every task of `batches`, runs to hundreds of KB for a wide
   * projection), and each runs where its block is.
   */
  List<Tuple2<Integer, Seq<String>>> blockLocations() {
    int n = batches.getNumPartitions();
    BlockId[] ids = new BlockId[n];
    for (int i = 0; i < n; ++i) ids[i] = new RDDBlockId(rddId, i);
    scala.collection.immutable.IndexedSeq<Seq<BlockManagerId>> stored =
        SparkEnv.get().blockManager().master().getLocations(ids);
    List<Tuple2<Integer, Seq<String>>> out = new ArrayList<>(n);
    for (int i = 0; i < n; ++i) {
      List<String> hosts = new ArrayList<>();
      for (BlockManagerId b : CollectionConverters.asJava(stored.apply(i))) {
        hosts.add(new ExecutorCacheTaskLocation(b.host(), b.executorId()).toString());
      }
      out.add(new Tuple2<>(i, CollectionConverters.asScala(hosts).toList()));
    }
    return out;
  }

  /**
   * The cached batches of `partition` (executor side) from the block that stores them,
   * here or on another executor, or null if no executor stores it any more (evicted or
   * unpersisted): then only the cache's lineage (`batches`) can make them.
   */
  @SuppressWarnings("unchecked")  // the block stores CachedBatches: the cache RDD's values
  java.util.Iterator<CachedBatch> storedBatches(int partition) {
    Option<BlockResult> block = SparkEnv.get().blockManager().get(
        new RDDBlockId(rddId, partition), ClassTag$.MODULE$.apply(CachedBatch.class));
    if (block.isEmpty()) return null;
    return (java.util.Iterator<CachedBatch>) (java.util.Iterator<?>)
        CollectionConverters.asJava(block.get().data());
  }

  /**
   * A cached batch's columns as PrimitiveBatch.write(scalars, arrays) takes its rows: the
   * scalar columns decompressed into vectors, the array columns read in place. Reused
   * from batch to batch; not thread-safe.
   */
  final class Reader {
    private final OnHeapColumnVector[] vectors = new OnHeapColumnVector[types.length];
    private final ArrayCursor[] cursors = new ArrayCursor[types.length];
    private final ArrayData[] arrays = new ArrayData[types.length];
    private final ColumnarBatch scalars;  // the vectors' rows (arrays' slots unused)
    private int numRows = 0;
    private int row = 0;

    Reader() {
      for (int i = 0; i < types.length; ++i) {
        if (types[i] instanceof ArrayType) cursors[i] = new ArrayCursor();
        else vectors[i] = new OnHeapColumnVector(4096, types[i]);
      }
      scalars = new ColumnarBatch(vectors);
    }

    /** Starts on `batch` (a DefaultCachedBatch); returns its row count. */
    int open(CachedBatch batch) {
      DefaultCachedBatch b = (DefaultCachedBatch) batch;
      numRows = b.numRows();
      row = 0;
      byte[][] buffers = b.buffers();
      for (int i = 0; i < types.length; ++i) {
        byte[] buffer = buffers[bufferIndex[i]];
        if (cursors[i] != null) {
          cursors[i].open(buffer, numRows);
        } else {
          vectors[i].reset();
          vectors[i].reserve(numRows);
          ColumnAccessor$.MODULE$.decompress(buffer, vectors[i], types[i], numRows);
        }
      }
      scalars.setNumRows(numRows);
      return numRows;
    }

    /** Writes the open batch's next row into `batch`. */
    void writeNext(PrimitiveBatch batch) {
      for (int i = 0; i < cursors.length; ++i) {
        if (cursors[i] != null) arrays[i] = cursors[i].next(row);
      }
      batch.write(scalars.getRow(row), arrays);
      ++row;
    }

    void close() {
      for (OnHeapColumnVector v : vectors) {
        if (v != null) v.close();
      }
    }
  }

  /** An array column of a cached batch, read row by row. */
  private static final class ArrayCursor {
    private final UnsafeArrayData array = new UnsafeArrayData();
    private byte[] buffer;
    private int nulls;      // null rows listed
    private int nextNull;   // index of the next listed null
    private int position;   // of the next non-null row's size

    void open(byte[] buffer, int numRows) {
      this.buffer = buffer;
      nulls = intAt(0);
      if (nulls < 0 || nulls > numRows || 4L + 4L * nulls > buffer.length) {
        throw new SparktfException("a cached array column lists " + nulls + " nulls in "
            + numRows + " rows: not Spark's cache layout");
      }
      nextNull = 0;
      position = 4 + 4 * nulls;
    }

    /** Row `row`'s array (rows are read in order), or null. Valid until the next call. */
    ArrayData next(int row) {
      if (nextNull < nulls && intAt(4 + 4 * nextNull) == row) {
        ++nextNull;
        return null;
      }
      int size = intAt(position);
      if (size < 8 || (long) position + 4 + size > buffer.length) {
        throw new SparktfException("a cached array of " + size + " bytes at " + position
            + " overruns its column's " + buffer.length + " bytes");
      }
      array.pointTo(buffer, Platform.BYTE_ARRAY_OFFSET + position + 4, size);
      position += 4 + size;
      return array;
    }

    private int intAt(int at) {
      if (at + 4 > buffer.length) {
        throw new SparktfException("a cached array column ends at byte " + buffer.length);
      }
      return Platform.getInt(buffer, Platform.BYTE_ARRAY_OFFSET + at);
    }
  }
}
