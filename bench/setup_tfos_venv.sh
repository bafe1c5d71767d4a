#!/usr/bin/env bash
# Creates .venv-tfos: TensorFlowOnSpark 2.2.5 from PyPI, in its own virtual
# environment, on the same pyspark and TensorFlow as sparktf's .venv. TFoS
# needs pkg_resources (setuptools < 81) and packaging, which it does not pin.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_CACHE_DIR="$PWD/build/pip-cache"
[ -x .venv-tfos/bin/python ] || python3 -m venv .venv-tfos
.venv-tfos/bin/pip install -q "setuptools<81" packaging==26.4 tensorflowonspark==2.2.5 \
  pyspark==4.3.0 tensorflow-cpu==2.21.0 "pandas==2.3.3" pyarrow==26.0.1
