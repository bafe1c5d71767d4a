#!/usr/bin/env bash
# Sets up everything sparktf needs on a fresh Debian 12 machine, idempotently:
# Debian packages (apt-get), the virtual environment .venv with pinned PyPI
# packages (requirements.txt), and sparktf itself (C++ core, CLI and the
# _native extension, with the Rust library behind hdfs:// and s3:// that cargo
# builds from crates.io) built into .venv, and the JVM feeder's jar (Maven). Safe to run again; skips what is done.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(g++ cmake ninja-build make pkg-config binutils zlib1g-dev libgtest-dev
  nlohmann-json3-dev libcli11-dev libcsv-dev libboost-dev clang libclang-rt-14-dev libfuzzer-14-dev
  procps iptables chromium chromium-driver)
# iptables: the chaos suite cuts a simulated host off; chromium: the status page's browser test
PYTHON="${PYTHON:-python3}"
# Caches stay inside the clone.
export PIP_CACHE_DIR="$PWD/build/pip-cache"


missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$pkg")
done
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jre-headless)
# javac and jni.h: the JVM feeder (jvm/) and its native library
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v "$PYTHON" >/dev/null 2>&1 || missing+=(python3)
"$PYTHON" -c "import venv, ensurepip" >/dev/null 2>&1 || missing+=(python3-venv)
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Rust builds the hdfs:// and s3:// library (hdfs-native and object_store need 1.85+).
# Machines of this kind have it from rustup; Debian 12's own cargo is too old.
CARGO="$(command -v cargo || echo "$HOME/.cargo/bin/cargo")"
if ! "$CARGO" --version >/dev/null 2>&1; then
  echo "bootstrap: cargo (Rust 1.85 or newer) is needed to build sparktf; install it with rustup" >&2
  exit 1
fi
# Crates are cached inside the clone.
export CARGO_HOME="$PWD/build/cargo-home"

if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing pinned Python packages (requirements.txt)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.txt
  echo "$want" > "$stamp"
fi

echo "bootstrap: building and installing sparktf into .venv"
.venv/bin/python -m pip install -q --no-build-isolation --no-deps .
.venv/bin/sparktf --help >/dev/null
echo "bootstrap: building the JVM feeder's jar (Maven)"
bash scripts/build_jvm.sh
