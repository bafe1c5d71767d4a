"""TFoS's gpu_info: the GPUs of this machine, from nvidia-smi. sparktf's nodes get their
GPUs from Spark's resource scheduling (spark.executor.resource.gpu.amount): the agent sets
CUDA_VISIBLE_DEVICES to the executor's GPU addresses."""

from __future__ import annotations

import subprocess

from sparktf import errors

MAX_RETRIES = 3
AS_STRING = "string"
AS_LIST = "list"


def _gpu_indexes() -> list[str]:
    try:
        out = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True,
                             timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.split(":")[0].split()[-1] for line in out.splitlines() if line.startswith("GPU ")]


def is_gpu_available() -> bool:
    """Whether nvidia-smi lists a GPU on this machine."""
    return bool(_gpu_indexes())


def get_gpus(num_gpu: int = 1, worker_index: int = -1, format: str = AS_STRING):  # noqa: A002
    """`num_gpu` of this machine's GPUs, starting at worker_index * num_gpu (wrapping):
    "0,1" (AS_STRING) or ["0", "1"] (AS_LIST). ResourceExhausted if there are fewer."""
    gpus = _gpu_indexes()
    if len(gpus) < num_gpu:
        raise errors.ResourceExhausted(f"{num_gpu} GPU(s) wanted, this machine has {len(gpus)}"
                                       " (nvidia-smi --list-gpus)")
    start = max(worker_index, 0) * num_gpu
    chosen = [gpus[(start + i) % len(gpus)] for i in range(num_gpu)]
    return chosen if format == AS_LIST else ",".join(chosen)
