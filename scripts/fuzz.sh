#!/usr/bin/env bash
# Builds the libFuzzer targets and runs each for SECONDS (default 60) from a seed
# corpus of valid files. PRESET (default "fuzz": clang, ASan+UBSan, optimized) is the
# CMake preset to build them with; run-tests.sh passes asan-ubsan, whose build (clang,
# ASan+UBSan, Debug) already holds them. Crashes are written to build/fuzz/crashes/
# and fail the script, as does an input that takes over 10 s.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
preset="${2:-fuzz}"
cmake --preset "$preset" >/dev/null
targets=(record_reader_fuzz example_fuzz protocol_fuzz batch_fuzz feed_reader_fuzz pickle_fuzz
  row_batcher_fuzz arrow_feed_fuzz uri_fuzz feed_service_fuzz agent_frames_fuzz output_lines_fuzz status_fuzz)
cmake --build --preset "$preset" --target "${targets[@]}"
corpus=build/fuzz/corpus
crashes=build/fuzz/crashes
for target in "${targets[@]}"; do mkdir -p "$corpus/$target"; done
mkdir -p "$crashes"
.venv/bin/python - "$corpus" <<'PY'
import os, sys, zlib, gzip
from sparktf import records as r
corpus = sys.argv[1]
ex = [r.encode_example({"a": [1, -2], "b": [0.5, 1.5], "c": [b"x", b""], "d": 3}),
      r.encode_example({"a": ("int64", []), "c": "text"}),
      r.encode_sequence_example({"id": b"s"}, {"t": [[1], [2, 3]]})]
for i, e in enumerate(ex):
    open(os.path.join(corpus, "example_fuzz", f"seed{i}"), "wb").write(e)
path = os.path.join(corpus, "tmp.tfrecord")
with r.TFRecordWriter(path, "") as w:
    for e in ex:
        w.write(e)
plain = open(path, "rb").read()
os.unlink(path)
seeds = {"plain": b"\x00" + plain, "gzip": b"\x01" + gzip.compress(plain),
         "zlib": b"\x02" + zlib.compress(plain), "skip": b"\x04" + plain[:-3] + b"junk"}
for name, data in seeds.items():
    open(os.path.join(corpus, "record_reader_fuzz", name), "wb").write(data)
import struct
def frame(t, payload):
    return struct.pack("<IHHI", 0x31465453, 1, t, len(payload)) + payload
reg = b'{"executor_id": 0, "host": "127.0.0.1", "port": 1}'
protocol = {"register": b"\x01" + frame(10, reg) + frame(12, b"{}") + frame(20, b'{"state":"running"}'),
            "exit": b"\x01" + frame(10, reg) + frame(30, b'{"exit_code": 0}'),
            "output": b"\x01" + frame(10, reg) + frame(21, b'{"lines": [["stdout", "x"]]}'),
            "barrier": b"\x01" + frame(40, b'{"name": "b", "executor_id": 1, "count": 1}'),
            "status": b"\x01" + frame(60, b"{}"), "nohello": b"\x00" + frame(60, b"{}"),
            "assign": b"\x01" + frame(72, b'{"feed": 7, "partition": 1, "partitions": 4, '
                                                 b'"host": "127.0.0.1"}')}
for name, data in protocol.items():
    open(os.path.join(corpus, "protocol_fuzz", name), "wb").write(data)
feeds = {"open-train": b"\x01" + frame(80, b'{"qname": "input", "partition": 0}'),
         "open-close": b"\x01" + frame(80, b'{"qname": "input", "close": true}'),
         "open-infer": b"\x01" + frame(80, b'{"qname": "input", "inference": true}'),
         "unknown-queue": b"\x01" + frame(80, b'{"qname": "other"}')}
# A batch: 2 rows, a float32 [2, 2] column "x" and an int64 [2] column "y"; the headers
# (88 bytes) and each payload (16) padded to 64.
batch = (struct.pack("<IIQ", 0x42465453, 2, 2)
         + struct.pack("<BBHI", 0, 2, 1, 0) + struct.pack("<QQQ", 2, 2, 16) + b"x" + b"\0" * 7
         + struct.pack("<BBHI", 3, 1, 1, 0) + struct.pack("<QQ", 2, 16) + b"y" + b"\0" * 7
         + b"\0" * 40 + struct.pack("<4f", 1, 2, 3, 4) + b"\0" * 48
         + struct.pack("<2q", 5, 6) + b"\0" * 48)
open(os.path.join(corpus, "batch_fuzz", "seed"), "wb").write(batch)
tag = struct.pack("<IIQqQ", 0x54465453, 0, 7, 1, 0)  # feed 7, partition 1, first row 0
open(os.path.join(corpus, "batch_fuzz", "tagged"), "wb").write(tag + batch)
def messages(*parts):
    return b"".join(struct.pack("<H", len(m)) + m for m in parts)
tag2 = struct.pack("<IIQqQ", 0x54465453, 0, 7, 1, 1)  # the same partition, from row 1
reader_seeds = {
    "retry": messages(tag + batch, tag + batch, tag2 + batch),
    "infer": messages(b"STFM" + b'{"kind": "begin", "partition": 0, "result_ring": "/none"}',
                      batch, b"STFM" + b'{"kind": "end", "partition": 0, "rows": 2}'),
    "abort": messages(batch, b"STFM" + b'{"kind": "abort", "partition": 3}', batch)}
for name, data in reader_seeds.items():
    open(os.path.join(corpus, "feed_reader_fuzz", name), "wb").write(data)
feeds["data"] = (b"\x01" + frame(80, b'{"qname": "input", "partition": 1}') + frame(82, batch)
                 + frame(83, b"{}"))
feeds["data-tagged"] = (b"\x01" + frame(80, b'{"qname": "input", "feed": 7, "partition": 1}')
                        + frame(82, batch) + frame(82, batch) + frame(83, b"{}"))
for name, data in feeds.items():
    open(os.path.join(corpus, "feed_service_fuzz", name), "wb").write(data)
spec = (b'{"cluster_spec": {"worker": ["127.0.0.2:1", "127.0.0.3:2"]}, "job_name": "worker", '
        b'"task_index": 0, "is_chief": true, "fed": false, "feed_index": -1, "generation": 0, '
        b'"tf_config": "{\\"task\\": {\\"type\\": \\"worker\\", \\"index\\": 0}}"}')
agent = {"spec": frame(11, b'{"num_nodes": 2, "registered": 1}') + frame(13, spec),
         "abort": frame(13, spec) + frame(50, b'{"reason": "worker:1 failed"}'),
         "stop": frame(13, spec) + frame(51, b"{}")}
for name, data in agent.items():
    open(os.path.join(corpus, "agent_frames_fuzz", name), "wb").write(data)
# Writes: a length byte (bit 0: stderr) then that many bytes of output.
def writes(*parts):
    return b"".join(bytes([len(t) << 1 | e]) + t for e, t in parts)
output = {"lines": writes((0, b"epoch 1\nep"), (1, b"warn\r\n"), (0, b"och 2\n")),
          "bar": writes((0, b"1/2 [=>]\r2/2 [==]\r"), (0, b"\rdone\n")),
          "long": writes((1, b"x" * 100), (1, b"\xff\xfe\n"))}
for name, data in output.items():
    open(os.path.join(corpus, "output_lines_fuzz", name), "wb").write(data)
# PySpark's pickled row batches: numbers, text, lists and numpy arrays.
import pickle
import numpy as np
rows = {"scalars": [(0.5, 7, True, "ab", b"cd", None, 2**40)] * 3,
        "lists": [([float(i), 2.0], [i, i + 1]) for i in range(5)],
        "numpy": [(np.arange(6).astype(t).reshape(2, 3), i)
                  for i, t in enumerate(["f4", "f8", "i4", "i8", "u1", "?"])]}
for name, value in rows.items():
    open(os.path.join(corpus, "pickle_fuzz", name), "wb").write(pickle.dumps(value, 5))
    blob = pickle.dumps(value, 5)  # row_batcher_fuzz: mode 0, one pickle, then the same again
    chunk = struct.pack("<H", len(blob)) + blob
    open(os.path.join(corpus, "row_batcher_fuzz", name), "wb").write(b"\0" + chunk + chunk)
# row_batcher_fuzz mode 1: 3 columns (a float scalar, a sequence of 2 floats, a 1x1 uint8 array)
open(os.path.join(corpus, "row_batcher_fuzz", "typed"), "wb").write(
    b"\x01\x02" + bytes([0, 1 + 9 * 2, 2 + 3 * 4]) + bytes(range(64)))
# arrow_feed_fuzz: a width byte, a type byte pair per column, then the batches' bytes:
# float32 and a fixed-size list of 2 float32; int8 and a list of utf8; bool and binary.
arrow = {"numbers": bytes([2, 0, 0, 18, 3]), "lists": bytes([2, 5, 0, 28, 0]),
         "bits": bytes([2, 9, 0, 12, 0])}
for name, head in arrow.items():
    open(os.path.join(corpus, "arrow_feed_fuzz", name), "wb").write(
        head + bytes([8, 1, 0, 1]) + bytes(range(1, 255)))
uris = ["hdfs:///tmp/x", "hdfs://nn:8020/a/b", "s3://bucket/k/part-*", "file:///x/y",
        "d/part-[0-9]", "*/x", "mem:///root/?", "rel/path"]
for i, u in enumerate(uris):
    open(os.path.join(corpus, "uri_fuzz", f"seed{i}"), "wb").write(u.encode())
# The status endpoint: requests (with and without the token), URLs and a status.
token = b"0123456789abcdef0123456789abcdef"
status_seeds = {
    "get": b"GET /api/status?token=" + token + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    "bearer": b"GET / HTTP/1.1\r\nAuthorization: Bearer " + token + b"\r\n\r\n",
    "cookie": b"GET /static/app.js HTTP/1.1\r\nCookie: a=b; sparktf_token=" + token + b"\r\n\r\n",
    "none": b"POST /api/history HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
    "url": b"http://[::1]:4050/?token=" + token,
    "table": b'{"nodes": [{"name": "worker:0", "training": {"step": 3}, "input": {"stall": 0.5}}]}'}
for name, data in status_seeds.items():
    open(os.path.join(corpus, "status_fuzz", name), "wb").write(data)
PY
status=0
for target in "${targets[@]}"; do
  echo "fuzz: $target for ${seconds}s"
  if ! "build/$preset/cpp/$target" "$corpus/$target" -max_total_time="$seconds" -timeout=10 \
       -rss_limit_mb=2048 -max_len=65536 -artifact_prefix="$crashes/$target-" \
       -print_final_stats=1 2>build/fuzz/$target.log; then
    echo "fuzz: $target FAILED; see build/fuzz/$target.log and $crashes" >&2
    tail -30 build/fuzz/$target.log >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" build/fuzz/$target.log | tail -2
  fi
done
exit $status
