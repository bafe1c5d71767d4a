#!/usr/bin/env bash
# Builds the JVM feeder's jar (jvm/, docs/architecture.md) with Maven, its repository
# inside the clone, packing in the libsparktf_jni.so that the sparktf build installed
# into .venv (or the environment of $SPARKTF_PYTHON), and puts the jar next to it
# (sparktf.jvm.jar_path()). Run by bootstrap.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
pkg=$("${SPARKTF_PYTHON:-.venv/bin/python}" -c "import os, sparktf; print(os.path.dirname(sparktf.__file__))")
if [ ! -f "$pkg/libsparktf_jni.so" ]; then
  echo "build_jvm: $pkg/libsparktf_jni.so is missing (sparktf was built without a JDK's jni.h)" >&2
  exit 1
fi
mvn -q -B -f jvm/pom.xml -Dmaven.repo.local="$PWD/build/m2" -Dsparktf.native.dir="$pkg" package
cp jvm/target/sparktf-feeder.jar "$pkg/sparktf-feeder.jar"
