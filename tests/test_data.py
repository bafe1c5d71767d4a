"""sparktf.data: sharding TFRecord files among workers with real tf.data."""

import types

import pytest

from sparktf import data
from sparktf import records as r


def ctx_for(num_workers, index, chief=False):
    spec = {"worker": ["h:1"] * (num_workers - (1 if chief else 0))}
    if chief:
        spec["chief"] = ["h:0"]
    job, task = ("chief", 0) if chief and index == 0 else ("worker", index - (1 if chief else 0))
    return types.SimpleNamespace(num_workers=num_workers, job_name=job, task_index=task,
                                 cluster_spec=spec, feed_index=index)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("shards")
    n = 0
    for f in range(3):
        with r.TFRecordWriter(str(d / f"part-{f}.tfrecord")) as w:
            for _ in range(10 + 7 * f):  # uneven files
                w.write(str(n).encode())
                n += 1
    return str(d), n


@pytest.mark.parametrize("workers,chief", [(2, False), (3, True), (5, False)])
def test_every_record_read_exactly_once(files, workers, chief):
    path, total = files
    seen = []
    for i in range(workers):
        ds = data.tfrecord_dataset(path, ctx_for(workers, i, chief))
        seen.append([int(x.numpy()) for x in ds])
    flat = sorted(sum(seen, []))
    assert flat == list(range(total))
    assert all(seen), "a worker got no data"


def test_file_level_when_enough_files_record_level_otherwise():
    files = [f"f{i}" for i in range(4)]
    assert data.shard_files(files, 2, 1) == (["f1", "f3"], None)
    assert data.shard_files(files[:1], 3, 2) == (["f0"], (3, 2))
    with pytest.raises(ValueError, match="outside"):
        data.shard_files(files, 2, 2)


def test_auto_shard_is_off_and_global_batch(files):
    import tensorflow as tf

    ds = data.tfrecord_dataset(files[0], ctx_for(2, 0))
    assert ds.options().experimental_distribute.auto_shard_policy == \
        tf.data.experimental.AutoShardPolicy.OFF
    assert data.global_batch_size(32, ctx_for(3, 0)) == 96
