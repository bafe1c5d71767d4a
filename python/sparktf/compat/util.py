"""TFoS's util helpers."""

from __future__ import annotations

import os
import socket

from sparktf.compat import gpu_info


def single_node_env(num_gpus: int = 1, worker_index: int = -1, nodes=()) -> None:
    """Sets CUDA_VISIBLE_DEVICES for a single-node run: `num_gpus` GPUs of this machine
    (the index among `nodes` on this host picks which), or none ('') without GPUs. (TFoS
    also expanded Hadoop's CLASSPATH; sparktf's storage needs no JVM.)"""
    if num_gpus > 0 and gpu_info.is_gpu_available():
        index = worker_index
        if worker_index >= 0 and nodes:
            mine = nodes[worker_index]
            index = [n for n in nodes if n.split(":")[0] == mine.split(":")[0]].index(mine)
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu_info.get_gpus(num_gpus, index)
    else:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""


def get_ip_address() -> str:
    """This host's address as Spark uses it (SPARK_LOCAL_IP), else its name's address.
    (TFoS opened a UDP socket towards 8.8.8.8; this sends nothing anywhere.)"""
    return os.environ.get("SPARK_LOCAL_IP") or socket.gethostbyname(socket.getfqdn())


def find_in_path(path: str, file: str):
    """The first `file` in the os.pathsep-separated directories of `path`, else False."""
    for d in path.split(os.pathsep):
        candidate = os.path.join(d, file)
        if os.path.isfile(candidate):
            return candidate
    return False


def write_executor_id(num: int) -> None:
    """Writes `num` to ./executor_id (TFoS's per-executor marker)."""
    with open("executor_id", "w") as f:
        f.write(str(num))


def read_executor_id() -> int:
    """Reads ./executor_id; FileNotFoundError if write_executor_id did not run here."""
    if not os.path.isfile("executor_id"):
        raise FileNotFoundError("no executor_id file in " + os.getcwd() +
                                ": write_executor_id did not run on this executor")
    with open("executor_id") as f:
        return int(f.read())
