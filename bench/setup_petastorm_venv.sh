#!/usr/bin/env bash
# Creates .venv-petastorm: Petastorm 0.13.1 (the newest on PyPI) in its own virtual
# environment. Petastorm reads Parquet through pyarrow's legacy ParquetDataset API
# (validate_schema, metadata_nthreads, .pieces), removed from pyarrow after 14, so it
# needs pyarrow 12 and numpy 1.x, and with them pyspark 3.5 and TensorFlow 2.15 (the
# last TensorFlow built against numpy 1.x). Setuptools < 70: Petastorm pins it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_CACHE_DIR="$PWD/build/pip-cache"
[ -x .venv-petastorm/bin/python ] || python3 -m venv .venv-petastorm
.venv-petastorm/bin/pip install -q "setuptools<70" petastorm==0.13.1 pyspark==3.5.7 \
  pyarrow==12.0.1 numpy==1.26.4 pandas==2.0.3 tensorflow-cpu==2.15.1
