"""The `sparktf records` command line, as a user runs it from the venv."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from sparktf import records as r

SPARKTF = shutil.which("sparktf", path=os.path.dirname(sys.executable)) or "sparktf"


def run(*args, check=True):
    p = subprocess.run([SPARKTF, *args], capture_output=True, text=True, timeout=120)
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}: {p.stderr}")
    return p


@pytest.fixture
def shards(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    for s in range(2):
        with r.TFRecordWriter(str(d / f"part-{s}.tfrecord")) as w:
            for i in range(5):
                w.write_example({"id": s * 5 + i, "x": [0.5, float("nan")],
                                 "raw": b"\xff\x00", "txt": "hé",
                                 "rag": ("int64", list(range(i)))})
    return d


def test_help_on_every_command():
    for cmd in ("count", "cat", "inspect", "verify", "convert"):
        p = run("records", cmd, "--help")
        assert "Usage" in p.stdout and "--help" in p.stdout


def test_count_and_verify(shards):
    p = run("records", "count", str(shards))
    assert p.stdout.strip().splitlines()[-1] == "10\ttotal"
    assert run("records", "verify", str(shards)).stdout.startswith("OK: 10 records in 2 file")


def test_verify_names_file_and_offset_of_first_bad_record(shards):
    path = shards / "part-1.tfrecord"
    data = bytearray(path.read_bytes())
    first_len = 12 + int.from_bytes(data[:8], "little") + 4
    data[first_len + 14] ^= 0xFF  # inside the second record's data
    path.write_bytes(bytes(data))
    p = run("records", "verify", str(shards), check=False)
    assert p.returncode == 1
    assert "part-1.tfrecord" in p.stdout and f"offset {first_len}" in p.stdout
    assert "FAILED after 6 good records" in p.stdout


def test_cat_prints_json_lines(shards):
    lines = run("records", "cat", str(shards), "-n", "3").stdout.splitlines()
    assert len(lines) == 3
    first = json.loads(lines[0])
    assert first["id"] == {"int64": [0]}
    assert first["x"] == {"float": [0.5, "NaN"]}
    assert first["raw"] == {"bytes": [{"base64": "/wA="}]}
    assert first["txt"] == {"bytes": ["hé"]}
    assert first["rag"] == {"int64": []}


def test_inspect_reports_types_lengths_and_schema(shards):
    out = json.loads(run("records", "inspect", "--json", str(shards)).stdout)
    assert out["records"] == 10 and out["files"] == 2
    feats = {f["name"]: f for f in out["features"]}
    assert feats["id"]["type"] == "int64_list" and feats["id"]["schema"] == "FixedLen(int64, [])"
    assert feats["x"]["schema"] == "FixedLen(float32, [2])"
    assert (feats["rag"]["min_length"], feats["rag"]["max_length"]) == (0, 4)
    assert feats["rag"]["schema"] == "VarLen(int64)"
    table = run("records", "inspect", str(shards)).stdout
    assert "records: 10 in 2 file(s)" in table


def test_convert_csv_to_shards(tmp_path):
    csv = tmp_path / "people.csv"
    csv.write_text('name,age,fare\nalice,30,7.25\n"bob, jr",,8.5\ncarol,41,9\ndan,5,1\n')
    out = tmp_path / "out"
    p = run("records", "convert", str(csv), "-o", str(out), "-n", "2", "-c", "GZIP")
    assert "wrote 4 records to 2 shard(s)" in p.stdout
    assert "name:bytes age:int64 fare:float32" in p.stdout
    files = sorted(os.listdir(out))
    assert files == ["part-00000-of-00002.tfrecord.gz", "part-00001-of-00002.tfrecord.gz"]
    rows = [r.decode_example(x) for x in r.iter_records(str(out))]
    names = sorted(row["name"][0] for row in rows)
    assert names == [b"alice", b"bob, jr", b"carol", b"dan"]
    bob = next(row for row in rows if row["name"] == [b"bob, jr"])
    assert "age" not in bob and bob["fare"].tolist() == [8.5]


def test_convert_jsonl_with_given_schema(tmp_path):
    src = tmp_path / "rows.jsonl"
    src.write_text('{"v": [1, 2], "label": 1, "w": 3}\n\n{"v": [], "label": 0, "w": 2.5}\n')
    out = tmp_path / "out"
    run("records", "convert", str(src), "-o", str(out), "--schema", "label:float32")
    rows = [r.decode_example(x) for x in r.iter_records(str(out))]
    assert rows[0]["label"].dtype.name == "float32"
    assert rows[0]["v"].tolist() == [1, 2] and rows[1]["v"].tolist() == []
    assert rows[1]["w"].tolist() == [2.5] and rows[0]["w"].dtype.name == "float32"


@pytest.mark.parametrize("content,fmt,message", [
    ("a,b\n1\n", "csv", "row 1 has 1 fields but the header has 2"),
    ("", "csv", "empty CSV file"),
    ('{"a": 1}\nnot json\n', "jsonl", ":2: not a JSON object"),
    ('{"a": 1}\n{"a": "x"}\n', "jsonl", "mixes strings and numbers"),
    ('{"a": {"b": 1}}\n', "jsonl", "objects are not supported"),
])
def test_convert_bad_input(tmp_path, content, fmt, message):
    src = tmp_path / f"in.{fmt}"
    src.write_text(content)
    p = run("records", "convert", str(src), "-o", str(tmp_path / "o"), check=False)
    assert p.returncode != 0 and message in p.stderr, p.stderr
    assert not any(os.scandir(tmp_path / "o")) if (tmp_path / "o").exists() else True


def test_missing_path_and_bad_compression(tmp_path):
    p = run("records", "count", str(tmp_path / "nope"), check=False)
    assert p.returncode == 2 and "NotFound" in p.stderr
    f = tmp_path / "f.tfrecord"
    f.write_bytes(b"")
    p = run("records", "count", "-c", "LZ4", str(f), check=False)
    assert p.returncode == 1 and "unknown compression" in p.stderr


def test_pack_leaves_out_the_packages_named(tmp_path):
    """`sparktf pack --exclude-package`: the package's files and its dist-info are not in
    the archive; everything else is, except pyspark (Spark ships it), pip and the test
    suites inside packages (a `tests` directory at any depth)."""
    import tarfile
    import venv

    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    site = next(env.glob("lib/python*/site-packages"))
    for entry, name in (("keep", "__init__.py"), ("drop", "__init__.py"),
                        ("drop-1.0.dist-info", "METADATA"), ("pyspark", "__init__.py"),
                        ("tests_util", "x.py"), ("keep/tests", "test_a.py"),
                        ("keep/sub/tests", "test_b.py"), ("keep/sub", "tests_like.py"),
                        ("pip", "__init__.py")):
        (site / entry).mkdir(parents=True, exist_ok=True)
        (site / entry / name).write_text("# stub\n")
    (site / "dropmod.py").write_text("# a one-module package\n")
    (env / "bin" / "pip3").write_text("#!/bin/sh\n")
    out = tmp_path / "env.tar"
    p = run("pack", "-p", str(env), "-o", str(out), "--exclude-package", "drop",
            "--exclude-package", "dropmod", "--exclude-package", "tests_*")
    assert "--archives env.tar#env" in p.stdout
    with tarfile.open(out) as t:
        assert "bin/pip3" not in t.getnames() and "bin/python" in t.getnames(), t.getnames()
        names = {n.split("site-packages/", 1)[1] for n in t.getnames() if "site-packages/" in n}
    assert {"keep/__init__.py", "keep/sub/tests_like.py"} <= names, names
    assert not [n for n in names
                if n.startswith(("drop", "pyspark", "tests_", "pip/")) or "/tests/" in n], names
    bad = run("pack", "-p", str(env), "-o", str(out), "-f", "--exclude-package", "a/b",
              check=False)
    assert bad.returncode == 1 and "package name" in bad.stderr
