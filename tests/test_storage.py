"""The filesystem seam on real stores: local disk, HDFS (Hadoop's minicluster: a NameNode
and 2 DataNodes) and S3 (moto's server). The same tests run on all three (`store`);
faults and bad input each get a clear error naming the URI, within 10 s."""

import hashlib
import os
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from sparktf import errors, fs, records

pytestmark = pytest.mark.storage

SPARKTF = os.path.join(os.path.dirname(sys.executable), "sparktf")


def run_python(code: str, env_update: dict, timeout: float = 60.0):
    """Runs `code` in a fresh interpreter (a fresh filesystem cache) with `env_update`;
    returns (CompletedProcess, seconds)."""
    env = dict(os.environ, **env_update)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=timeout)
    return p, time.monotonic() - t0


def write_examples(uri, n, compression=None):
    with records.TFRecordWriter(uri, compression) as w:
        for i in range(n):
            w.write_example({"id": i, "x": [i * 0.5, -1.0], "name": f"row-{i}"})


# ---- operations ------------------------------------------------------------------------

def test_operations(store):
    d = f"{store}/ops"
    fs.makedirs(d)
    fs.write_bytes(f"{d}/a.bin", b"alpha")
    fs.write_bytes(f"{d}/sub/b.bin", b"beta" * 1000)
    assert fs.exists(f"{d}/a.bin") and not fs.exists(f"{d}/zzz")
    st = fs.stat(f"{d}/a.bin")
    assert st.size == 5 and not st.is_dir and st.uri == f"{d}/a.bin"
    assert fs.stat(f"{d}/sub").is_dir
    names = [(os.path.basename(i.uri), i.is_dir) for i in fs.listdir(d)]
    assert names == [("a.bin", False), ("sub", True)]
    assert fs.glob(f"{d}/*.bin") == [f"{d}/a.bin"]
    assert fs.glob(f"{d}/*/b.*") == [f"{d}/sub/b.bin"]
    assert fs.read_bytes(f"{d}/sub/b.bin") == b"beta" * 1000
    f = fs.open_input(f"{d}/sub/b.bin")
    assert f.size() == 4000 and f.read_at(3998, 10) == b"ta" and f.read(4) == b"beta"
    f.close()
    fs.rename(f"{d}/a.bin", f"{d}/c.bin")
    assert not fs.exists(f"{d}/a.bin") and fs.read_bytes(f"{d}/c.bin") == b"alpha"
    fs.delete(d, recursive=True)
    assert not fs.exists(f"{d}/c.bin") and not fs.exists(f"{d}/sub/b.bin")


def test_nothing_is_visible_before_commit_and_abort_leaves_nothing(store):
    d = f"{store}/commit"
    fs.makedirs(d)
    out = fs.open_output(f"{d}/f")
    out.write(b"x" * 100)
    assert not fs.exists(f"{d}/f")
    out.close()
    assert fs.read_bytes(f"{d}/f") == b"x" * 100
    out = fs.open_output(f"{d}/g")
    out.write(b"y" * 100)
    out.abort()
    with pytest.raises(RuntimeError):
        with records.TFRecordWriter(f"{d}/h.tfrecord") as w:
            w.write(b"record")
            raise RuntimeError("fails mid-write")
    assert [os.path.basename(i.uri) for i in fs.listdir(d)] == ["f"]


@pytest.mark.parametrize("compression", [None, "GZIP"])
def test_records_round_trip(store, compression):
    d = f"{store}/records"
    suffix = ".tfrecord.gz" if compression else ".tfrecord"
    for part in range(3):
        write_examples(f"{d}/part-{part}{suffix}", 100)
    fs.write_bytes(f"{d}/_SUCCESS", b"")
    assert records.list_files(d) == [f"{d}/part-{p}{suffix}" for p in range(3)]
    assert records.count_records(d) == 300
    assert records.count_records(f"{d}/part-*") == 300
    first = next(records.iter_records(f"{d}/part-0{suffix}"))
    assert records.decode_example(first)["id"].tolist() == [0]
    schema = records.infer_schema(d)
    assert schema["x"] == records.FixedLen("float32", (2,))
    cols = records.read_columns(d, schema)
    assert cols["id"].tolist() == list(range(100)) * 3
    assert np.allclose(cols["x"][:, 0], np.tile(np.arange(100) * 0.5, 3))
    if not compression:
        assert len(records.record_index(f"{d}/part-1{suffix}")) == 100


def test_large_files_cross_blocks_and_multipart_uploads(store):
    # 20 MiB: three HDFS blocks (8 MiB), and an S3 multipart upload (8 MiB parts).
    data = np.random.default_rng(7).integers(0, 256, 20 << 20, dtype=np.uint8).tobytes()
    uri = f"{store}/big.bin"
    fs.write_bytes(uri, data)
    assert fs.stat(uri).size == len(data)
    back = fs.read_bytes(uri)
    assert hashlib.sha256(back).digest() == hashlib.sha256(data).digest()
    f = fs.open_input(uri)
    assert f.read_at(9 << 20, 16) == data[9 << 20:(9 << 20) + 16]
    f.close()


def test_cli_on_uris(store, tmp_path):
    csv = tmp_path / "people.csv"
    csv.write_text("name,age,score\n" + "".join(f"p{i},{i},{i / 10}\n" for i in range(50)))
    out = f"{store}/converted"
    p = subprocess.run([SPARKTF, "records", "convert", str(csv), "-o", out, "-n", "3",
                        "-c", "GZIP"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert len(records.list_files(out)) == 3
    p = subprocess.run([SPARKTF, "records", "count", out], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[-1] == "50" or "50" in p.stdout
    p = subprocess.run([SPARKTF, "records", "cat", "-n", "2", out], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.count("\n") == 2 and '"name"' in p.stdout
    p = subprocess.run([SPARKTF, "records", "inspect", out], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and "age" in p.stdout and "score" in p.stdout
    p = subprocess.run([SPARKTF, "records", "verify", out], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr


# ---- faults and bad input ----------------------------------------------------------------

def test_missing_paths_and_unknown_schemes(store):
    with pytest.raises(errors.NotFound, match=f"{store}/missing"):
        fs.stat(f"{store}/missing")
    with pytest.raises(errors.NotFound, match="missing"):
        records.count_records(f"{store}/missing")
    with pytest.raises(errors.InvalidArgument) as e:
        records.count_records("gs://bucket/x")
    assert "gs://bucket/x" in str(e.value)
    assert all(s in str(e.value) for s in ("hdfs://", "s3://", "file://"))


def test_corrupt_record_on_hdfs_is_data_loss_with_uri_and_offset(hdfs):
    good = records.encode_example({"id": 1})
    framed = bytearray()
    with records.TFRecordWriter("hdfs:///tmp/corrupt-src.tfrecord") as w:
        for _ in range(3):
            w.write(good)
    framed = bytearray(fs.read_bytes("hdfs:///tmp/corrupt-src.tfrecord"))
    record_len = len(framed) // 3
    framed[record_len + 14] ^= 0xFF  # a data byte of the second record
    fs.write_bytes("hdfs:///tmp/corrupt.tfrecord", bytes(framed))
    with pytest.raises(errors.DataLoss) as e:
        records.count_records("hdfs:///tmp/corrupt.tfrecord")
    assert "hdfs:///tmp/corrupt.tfrecord" in str(e.value)
    assert f"offset {record_len}" in str(e.value)


def test_datanode_killed_mid_read_completes_from_another_replica(hdfs):
    data = np.random.default_rng(3).integers(0, 256, 24 << 20, dtype=np.uint8).tobytes()
    fs.write_bytes("hdfs:///tmp/replicated.bin", data)
    # Each round kills one of the two DataNodes after the first MiB: in one of the rounds
    # it is the one being read from.
    for dn in (0, 1):
        f = fs.open_input("hdfs:///tmp/replicated.bin")
        got = [f.read(1 << 20)]
        hdfs.command(f"stop-datanode {dn}")
        try:
            t0 = time.monotonic()
            while chunk := f.read(1 << 20):
                got.append(chunk)
            assert time.monotonic() - t0 < 30
        finally:
            f.close()
            hdfs.command(f"restart-datanode {dn}")
        assert hashlib.sha256(b"".join(got)).digest() == hashlib.sha256(data).digest()


def test_namenode_down_fails_within_seconds_naming_it(hdfs):
    uri = "hdfs:///tmp/while-down"
    code = f"""
from sparktf import fs
fs.exists('hdfs:///tmp')   # connected while it was up
import sys; sys.stdout.write('up\\n'); sys.stdout.flush(); sys.stdin.readline()
try:
    fs.stat('{uri}')
except Exception as e:
    print(type(e).__name__, e)
"""
    env = dict(os.environ)
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "up"
        hdfs.command("stop-namenode")
        t0 = time.monotonic()
        out, err = p.communicate("go\n", timeout=30)
        elapsed = time.monotonic() - t0
    finally:
        p.kill()
        hdfs.command("restart-namenode")
    assert elapsed < 10, (elapsed, out, err)
    assert out.startswith("Unavailable"), (out, err)
    assert uri in out and hdfs.namenode in out and "core-site.xml" in out


def test_unresponsive_namenode_times_out_with_where_it_came_from(tmp_path):
    # A namenode that accepts connections and never answers.
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    port = silent.getsockname()[1]
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name>"
        f"<value>hdfs://127.0.0.1:{port}</value></property></configuration>")
    try:
        p, took = run_python(
            "from sparktf import fs\ntry: fs.listdir('hdfs:///data')\n"
            "except Exception as e: print(type(e).__name__, e)",
            {"HADOOP_CONF_DIR": str(conf), "SPARKTF_FS_TIMEOUT": "3"})
    finally:
        silent.close()
    assert took < 10, (took, p.stdout, p.stderr)
    assert p.stdout.startswith("DeadlineExceeded"), (p.stdout, p.stderr)
    assert "hdfs:///data" in p.stdout and f"127.0.0.1:{port}" in p.stdout
    assert str(conf / "core-site.xml") in p.stdout


def test_permission_denied_names_the_path(hdfs):
    fs.makedirs("hdfs:///restricted")  # made by the superuser, mode 755
    p, took = run_python(
        "from sparktf import records\n"
        "try:\n"
        "    with records.TFRecordWriter('hdfs:///restricted/x.tfrecord') as w: w.write(b'r')\n"
        "except Exception as e: print(type(e).__name__, e)",
        {"HADOOP_USER_NAME": "alice"})
    assert took < 10
    assert p.stdout.startswith("PermissionDenied"), (p.stdout, p.stderr)
    assert "hdfs:///restricted/x.tfrecord" in p.stdout and "alice" in p.stdout
    assert not fs.listdir("hdfs:///restricted")


def test_s3_missing_bucket_and_wrong_credentials(s3):
    with pytest.raises(errors.NotFound, match="no-such-bucket"):
        fs.listdir("s3://no-such-bucket/data")
    p, took = run_python(
        f"from sparktf import fs\ntry: fs.listdir('s3://{s3.bucket}/')\n"
        "except Exception as e: print(type(e).__name__, e)",
        {"AWS_ACCESS_KEY_ID": "AKIAWRONGWRONGWRONG0", "AWS_SECRET_ACCESS_KEY": "wrong"})
    assert took < 10
    assert p.stdout.startswith("Unauthenticated"), (p.stdout, p.stderr)
    assert f"s3://{s3.bucket}/" in p.stdout


def test_reads_release_the_gil(hdfs):
    write_examples("hdfs:///tmp/gil.tfrecord", 20000)
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        for _ in range(3):
            assert records.count_records("hdfs:///tmp/gil.tfrecord") == 20000
    finally:
        stop.set()
        t.join()
    gaps = np.diff(ticks)
    assert len(ticks) > 10 and gaps.max() < 0.5


def test_absolute_path_resolves_against_the_default_fs_like_tfos(monkeypatch):
    from sparktf.node import NodeContext

    info = {"executor_id": 0, "worker_num": 0, "job_name": "chief", "task_index": 0,
            "cluster_spec": {"chief": ["h:1"]}, "num_workers": 1}
    monkeypatch.setenv("HADOOP_USER_NAME", "alice")
    ctx = NodeContext(info, defaultFS="hdfs://nn:8020", working_dir="/wd")
    assert ctx.defaultFS == "hdfs://nn:8020"
    assert ctx.absolute_path("data/train") == "hdfs://nn:8020/user/alice/data/train"
    assert ctx.absolute_path("/data/train") == "hdfs://nn:8020/data/train"
    assert ctx.absolute_path("s3://b/k") == "s3://b/k"
    local = NodeContext(info, defaultFS="file://", working_dir="/wd")
    assert local.absolute_path("x/y") == "file:///wd/x/y"
    assert local.absolute_path("/x") == "file:///x"


def test_ha_nameservice_fails_over_to_the_namenode_that_answers(hdfs, tmp_path):
    # nn1 is down (nothing listens there); nn2 is the minicluster's NameNode.
    conf = tmp_path / "ha-conf"
    conf.mkdir()
    (conf / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>hdfs://ns1</value>"
        "</property></configuration>")
    props = {"dfs.nameservices": "ns1", "dfs.ha.namenodes.ns1": "nn1,nn2",
             "dfs.namenode.rpc-address.ns1.nn1": "127.0.0.1:9",
             "dfs.namenode.rpc-address.ns1.nn2": hdfs.namenode}
    (conf / "hdfs-site.xml").write_text("<configuration>" + "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items())
        + "</configuration>")
    p, took = run_python(
        "from sparktf import fs\n"
        "fs.write_bytes('hdfs:///tmp/ha.bin', b'through ns1')\n"
        "print(fs.read_bytes('hdfs://ns1/tmp/ha.bin').decode())\n"
        "try: fs.stat('hdfs://ns1/nope')\n"
        "except Exception as e: print(type(e).__name__, e)",
        {"HADOOP_CONF_DIR": str(conf)})
    assert took < 10, (took, p.stderr)
    lines = p.stdout.splitlines()
    assert lines[0] == "through ns1", p.stderr
    assert lines[1].startswith("NotFound") and "nameservice ns1" in lines[1], lines
    assert fs.read_bytes(f"{hdfs.url}/tmp/ha.bin") == b"through ns1"
