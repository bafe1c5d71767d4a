"""What a cluster may leave behind on this machine, and waiting for it to go: node
processes (TF processes, node agents, TensorBoards started from this checkout; those of
another checkout are not this run's), listening TCP ports, feed rings in /dev/shm and
node temp dirs (in this session's TMPDIR: see conftest)."""

import glob
import os
import socket
import struct
import tempfile
import time
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent).encode()


def node_processes() -> list:
    pids = []
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            args = open(cmdline, "rb").read().split(b"\0")
        except OSError:
            continue
        ours = b"sparktf.node" in args or any(b"tensorboard" in a for a in args[1:3]) or (
            len(args) > 1 and args[1] == b"agent" and args[0].endswith(b"sparktf"))
        if ours and args[0].startswith(ROOT):
            pids.append(int(cmdline.split("/")[2]))
    return pids


def tcp_listeners() -> set:
    """(IPv4 address, port) of every listening TCP socket on this machine."""
    out = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A":  # LISTEN
                ip, port = local.split(":")
                out.add((socket.inet_ntoa(struct.pack("<I", int(ip, 16))), int(port, 16)))
    return out


def shm_segments() -> list:
    return glob.glob("/dev/shm/sparktf-*")


def node_temp_dirs() -> list:
    temp = tempfile.gettempdir()
    return (glob.glob(os.path.join(temp, "sparktf-node-*")) +
            glob.glob(os.path.join(temp, "sparktf-export-*")))


def leftovers(ports: set = frozenset(), ignore: dict | None = None) -> dict:
    """Everything still there but what `ignore` (an earlier leftovers()) lists; `ports`:
    (host, port) pairs that must no longer listen."""
    now = {"processes": node_processes(),
           "ports": sorted(f"{h}:{p}" for h, p in set(ports) & tcp_listeners()),
           "shm": shm_segments(), "temp": node_temp_dirs()}
    ignore = ignore or {}
    return {k: [v for v in vs if v not in ignore.get(k, [])] for k, vs in now.items()}


def wait_leftovers(ports: set = frozenset(), timeout: float = 15,
                   ignore: dict | None = None) -> dict:
    """Waits up to `timeout` s for nothing (but `ignore`) to be left; returns what is."""
    deadline = time.monotonic() + timeout
    while True:
        left = leftovers(ports, ignore)
        if not any(left.values()) or time.monotonic() >= deadline:
            return left
        time.sleep(0.2)
