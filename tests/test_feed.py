"""Feed rings and batches from Python, across real processes (the building
blocks of InputMode.SPARK)."""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from sparktf import _native, errors


def ring_name(tag):
    return f"/sparktf-pytest-{tag}-{os.getpid()}"


def in_shm(name):
    return os.path.exists("/dev/shm" + name)


def test_batch_round_trip():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = np.array([7, 8, 9], dtype=np.int64)
    flags = np.array([True, False, True])
    data = _native.encode_batch({"x": x, "y": y, "ok": flags, "s": [b"a", b"", b"\xff"]})
    rows, cols = _native.decode_batch(data)
    assert rows == 3
    assert np.array_equal(cols["x"], x) and cols["x"].dtype == np.float32
    assert np.array_equal(cols["y"], y) and np.array_equal(cols["ok"], flags)
    assert cols["s"] == [b"a", b"", b"\xff"]
    with pytest.raises(errors.InvalidArgument, match="rows"):
        _native.encode_batch({"x": x, "y": y[:2]})
    with pytest.raises(errors.InvalidArgument, match="malformed"):
        _native.decode_batch(data[:-8])


PRODUCER = """
import sys, numpy as np
from sparktf import _native
ring = _native.Ring.attach(sys.argv[1])
for i in range(int(sys.argv[2])):
    ring.push(_native.encode_batch({"x": np.full((64, 10), i, np.float32)}), 30)
if sys.argv[3] == "close":
    ring.close_input()
    ring.close()
else:
    import time; time.sleep(60)
"""


def test_batches_flow_between_processes_and_nothing_is_left():
    name = ring_name("flow")
    ring = _native.Ring.create(name, 1 << 20)
    p = subprocess.Popen([sys.executable, "-c", PRODUCER, name, "200", "close"])
    total = 0
    while (msg := ring.pop(30)) is not None:
        rows, cols = _native.decode_batch(msg)
        total += int(cols["x"].sum())
    assert p.wait(30) == 0
    assert total == sum(i * 640 for i in range(200))
    assert ring.stats()["messages_popped"] == 200
    ring.close()
    assert not in_shm(name)


def test_killed_producer_is_an_error_not_a_hang():
    name = ring_name("deadprod")
    ring = _native.Ring.create(name, 1 << 20)
    p = subprocess.Popen([sys.executable, "-c", PRODUCER, name, "3", "hang"])
    for _ in range(3):
        assert ring.pop(30) is not None
    p.send_signal(signal.SIGKILL)
    p.wait()
    t0 = time.monotonic()
    with pytest.raises(errors.Aborted, match="died while feeding"):
        ring.pop(30)
    assert time.monotonic() - t0 < 2
    ring.close()
    assert not in_shm(name)


CONSUMER = """
import sys, time
from sparktf import _native
ring = _native.Ring.create(sys.argv[1], 1 << 16)
print("ready", flush=True)
time.sleep(60)
"""


def test_killed_consumer_is_noticed_and_its_segment_removed():
    name = ring_name("deadcons")
    p = subprocess.Popen([sys.executable, "-c", CONSUMER, name], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    ring = _native.Ring.attach(name)
    p.send_signal(signal.SIGKILL)
    p.wait()
    batch = _native.encode_batch({"x": np.zeros((100, 10), np.float32)})
    t0 = time.monotonic()
    with pytest.raises(errors.Aborted, match="consumer"):
        for _ in range(100):
            ring.push(batch, 30)
    assert time.monotonic() - t0 < 2
    ring.close()
    assert not in_shm(name)
    assert _native.sweep_stale_rings(f"/sparktf-pytest-") == []
