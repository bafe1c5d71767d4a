"""TensorBoard that reads logdirs on hdfs:// and s3:// (and local ones): it registers
sparktf's TensorFlow filesystem plugin, then runs TensorBoard's own main.

    sparktf tensorboard --logdir hdfs:///user/me/model/logs [--port 6006 ...]
    python -m sparktf.tensorboard --logdir hdfs:///...

For a logdir on these schemes TensorBoard loads event files in Python through
TensorFlow's filesystems (``--load_fast=false``): its fast Rust loader reads only local
disks and GCS.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    import sparktf.tf  # noqa: F401 - registers hdfs://, s3://, s3a:// with TensorFlow
    from tensorboard import main as tb_main

    remote = any(a.split("=", 1)[-1].startswith(("hdfs://", "s3://", "s3a://")) for a in argv)
    if remote and not any(a.startswith("--load_fast") for a in argv):
        argv.append("--load_fast=false")
    sys.argv = ["tensorboard"] + argv
    tb_main.run_main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
