#!/usr/bin/env bash
# Sets everything up, then runs every test: the C++ suite (CTest/GoogleTest)
# built with AddressSanitizer and UndefinedBehaviorSanitizer (clang; the build also
# holds the fuzz targets, so the core is built once for both) and with
# ThreadSanitizer (g++; the coordinator, agent, feed and status server run threads),
# both with -Wall -Wextra -Werror, a short libFuzzer run of each fuzz target from the
# first build, and the pytest suite (TensorFlow and
# a local-cluster Spark included; HDFS from Hadoop's minicluster and S3 from moto,
# started by the tests' fixtures). Exits non-zero if anything fails or if a runner
# executed no test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh

phase() { echo "== $1 (at $((SECONDS / 60)) min $((SECONDS % 60)) s)"; }

for preset in asan-ubsan tsan; do
  phase "C++ tests: $preset"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  ctest --preset "$preset" --no-tests=error -j2
done

phase "fuzz smoke run"
bash scripts/fuzz.sh "${SPARKTF_FUZZ_SECONDS:-5}" asan-ubsan

phase "Hadoop minicluster jars (Maven Central, cached in build/)"
.venv/bin/python scripts/minicluster.py fetch

phase "Python tests"
# pytest exits 5 when it collected no test, which fails this script too.
.venv/bin/python -m pytest tests -q -p no:cacheprovider --timeout=600 --durations=30 "$@"
