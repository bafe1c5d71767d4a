"""`sparktf pack`: this virtual environment as one archive for `spark-submit --archives`.

    sparktf pack -o env.tar.gz
    spark-submit --master yarn --archives env.tar.gz#env \\
        --conf spark.pyspark.python=./env/bin/python ...

It is venv-pack (the environment's files, its scripts made relocatable) without what every
YARN container gets from Spark itself: pyspark (Spark ships pyspark.zip and py4j to the
application master and the executors), and without what no job runs: TensorFlow's C++
headers (tensorflow/include: 18,000 files and 430 MB that only compiling against
TensorFlow needs), the packages' own test suites (every `tests` directory inside a package:
pandas', numpy's, scipy's, scikit-learn's, about 5,500 files and 160 MB) and pip. The file
count is what a NodeManager pays for: without Hadoop's native library it forks a chmod for
every unpacked file (about 2 ms each). Compiled bytecode stays: without it every Python
process of a job would compile TensorFlow's modules again (6 s more per import).
sparktf's extension and node agent find each other relative to the package, so they work
wherever the archive is unpacked.

As with venv-pack, the environment's `python` stays a link to the base interpreter it was
made from: every node needs that interpreter at the same path (nodes built from one
image); conda-pack, which bundles the interpreter, is the way when they are not.
"""

from __future__ import annotations

import argparse
import os
import sys

SITE = "lib/python*/site-packages/"


def package_patterns(name: str) -> list[str]:
    """What excluding the site-packages entry `name` drops: its directory (or module)
    and its dist-info. `name` is the importable name or a glob over such names
    (`moto`, `tf_keras`, `trio*`)."""
    if not name or "/" in name:
        raise ValueError(f"--exclude-package takes a package name, not {name!r}")
    return [SITE + name + "/*", SITE + name + ".py", SITE + name + "-*.dist-info/*"]


# What Spark provides in every container of a PySpark application, the installer, what only
# compiling against TensorFlow needs and the packages' test suites (fnmatch's * spans
# directories: a `tests` directory at any depth inside a package).
EXCLUDE = [*package_patterns("pyspark"), *package_patterns("py4j"), *package_patterns("pip"),
           "bin/pip*", SITE + "tensorflow/include/*", SITE + "*/tests/*"]


def pack(output: str, prefix: str | None = None, compress_level: int = 1,
         force: bool = False, exclude_packages: tuple[str, ...] = ()) -> str:
    """Packs the virtual environment at `prefix` (default: the running one) into
    `output` (.tar.gz, .tgz, .tar or .zip); returns its path. `exclude_packages`:
    site-packages entries the job does not need (package_patterns), left out too."""
    try:
        import venv_pack
    except ImportError as e:
        raise RuntimeError("sparktf pack needs venv-pack: pip install venv-pack") from e
    prefix = prefix or sys.prefix
    if prefix == getattr(sys, "base_prefix", prefix) and not os.path.exists(
            os.path.join(prefix, "pyvenv.cfg")):
        raise RuntimeError(f"{prefix} is not a virtual environment; run sparktf pack with "
                           "the environment's own python (or pass --prefix)")
    patterns = EXCLUDE + [p for name in exclude_packages for p in package_patterns(name)]
    return venv_pack.pack(prefix=prefix, output=output, compress_level=compress_level,
                          force=force, filters=[("exclude", p) for p in patterns])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sparktf pack", description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default="env.tar.gz",
                    help="archive to write: .tar.gz/.tgz, .tar (fastest) or .zip")
    ap.add_argument("-p", "--prefix", help="the virtual environment (default: this one)")
    ap.add_argument("--compress-level", type=int, default=1)
    ap.add_argument("-f", "--force", action="store_true", help="overwrite the output")
    ap.add_argument("--exclude-package", action="append", default=[], metavar="NAME",
                    help="leave out a package the job does not need (its importable name "
                         "or a glob of names; repeatable): fewer files for each node to "
                         "unpack")
    a = ap.parse_args(argv)
    try:
        out = pack(a.output, a.prefix, a.compress_level, a.force,
                   tuple(a.exclude_package))
    except Exception as e:  # venv-pack raises its own error types
        print(f"sparktf pack: {e}", file=sys.stderr)
        return 1
    size = os.path.getsize(out)
    print(f"{out}: {size / 2**20:.0f} MiB; ship it with --archives {os.path.basename(out)}"
          f"#env --conf spark.pyspark.python=./env/bin/python")
    return 0


if __name__ == "__main__":
    sys.exit(main())
