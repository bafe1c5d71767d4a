"""tf.data helpers for nodes that read their own data (InputMode.TENSORFLOW).

Sharding follows the seeds' rule: with at least as many files as workers,
each worker reads whole files (file-level); with fewer files, every worker
reads all files and keeps every N-th record (record-level). Either way no
record is read twice or skipped, and TensorFlow's auto-sharding is turned off
so that it does not shard a second time.
"""

from __future__ import annotations

from typing import Sequence

from sparktf import records as _records


def shard_files(files: Sequence[str], num_workers: int, index: int):
    """(files for worker `index`, record_shard) where record_shard is None for
    file-level sharding or (num_workers, index) for record-level sharding."""
    if num_workers < 1 or not 0 <= index < num_workers:
        raise ValueError(f"worker index {index} is outside 0..{num_workers - 1}")
    files = sorted(files)
    if not files:
        raise ValueError("no input files")
    if len(files) >= num_workers:
        return files[index::num_workers], None
    return files, (num_workers, index)


def worker_index(ctx) -> int:
    """Position of this node among the training workers (chief first)."""
    return ctx.feed_index


def tfrecord_dataset(paths, ctx, compression: str | None = None, **kwargs):
    """A tf.data.TFRecordDataset of this worker's share of `paths` (files or
    directories), with auto-sharding off."""
    import tensorflow as tf

    files = _records.list_files(paths)
    mine, record_shard = shard_files(files, ctx.num_workers, worker_index(ctx))
    if compression is None:
        compression = "GZIP" if mine[0].endswith(".gz") else (
            "ZLIB" if mine[0].endswith(".zlib") else "")
    ds = tf.data.TFRecordDataset(mine, compression_type=compression, **kwargs)
    if record_shard is not None:
        ds = ds.shard(*record_shard)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return ds.with_options(options)


def global_batch_size(per_worker_batch: int, ctx) -> int:
    """Global batch = per-worker batch x workers (what a MultiWorkerMirrored
    dataset must be batched with: TensorFlow splits it across workers)."""
    return int(per_worker_batch) * int(ctx.num_workers)
