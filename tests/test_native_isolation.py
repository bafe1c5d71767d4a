"""The extension shares a process with TensorFlow: it must link no
protobuf/gRPC/abseil and export nothing but its init symbol."""

import glob
import os
import subprocess
import sys

import sparktf

NATIVE = glob.glob(os.path.join(os.path.dirname(sparktf.__file__), "_native*.so"))[0]

USE_BOTH = """
import {first}, {second}
import tensorflow as tf
from sparktf import records as r
ex = tf.train.Example(features=tf.train.Features(feature={{
    'x': tf.train.Feature(int64_list=tf.train.Int64List(value=[1, 2, 3]))}}))
assert r.encode_example({{'x': [1, 2, 3]}}) == ex.SerializeToString()
assert r.decode_example(ex.SerializeToString())['x'].tolist() == [1, 2, 3]
assert float(tf.reduce_sum(tf.constant([1.0, 2.0]))) == 3.0
print('ok')
"""


def run(code):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)


def test_tensorflow_then_sparktf():
    p = run(USE_BOTH.format(first="tensorflow", second="sparktf._native"))
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stderr[-2000:]


def test_sparktf_then_tensorflow():
    p = run(USE_BOTH.format(first="sparktf._native", second="tensorflow"))
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stderr[-2000:]


def test_exports_only_init_symbol():
    out = subprocess.run(["nm", "-D", "--defined-only", NATIVE], capture_output=True,
                         text=True, check=True).stdout
    symbols = [line.split()[-1] for line in out.splitlines() if line.strip()]
    assert symbols == ["PyInit__native"]


def test_links_no_protobuf_grpc_or_abseil():
    out = subprocess.run(["ldd", NATIVE], capture_output=True, text=True, check=True).stdout
    for lib in ("protobuf", "grpc", "absl"):
        assert lib not in out, out
    undefined = subprocess.run(["nm", "-D", "--undefined-only", NATIVE], capture_output=True,
                               text=True, check=True).stdout
    for marker in ("google8protobuf", "absl", "grpc"):
        assert marker not in undefined


def test_the_feeders_jar_carries_a_jni_library_exporting_only_its_entry_points(tmp_path):
    """The JVM feeder's jar holds its classes and libsparktf_jni.so, which exports the
    native methods of io.sparktf.NativeFeed and nothing else (it shares the executor's
    JVM with whatever else the job loads)."""
    import zipfile

    from sparktf import jvm

    with zipfile.ZipFile(jvm.jar_path()) as jar:
        names = set(jar.namelist())
        assert {"io/sparktf/JvmFeeder.class", "io/sparktf/NativeFeed.class",
                "io/sparktf/PrimitiveBatch.class", "io/sparktf/CachedColumns.class"} <= names, \
            sorted(names)
        lib = tmp_path / "libsparktf_jni.so"
        lib.write_bytes(jar.read("io/sparktf/native/libsparktf_jni.so"))
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    symbols = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
    assert symbols == sorted(f"Java_io_sparktf_NativeFeed_{m}" for m in (
        "open", "push", "finish", "stopped", "local", "feedIndex", "yielded", "close"))


def test_the_feed_op_library_exports_nothing_and_needs_only_tensorflows_c_api():
    """libsparktf_tf_ops.so registers its op from a static initializer: it exports no
    symbol, and what it needs from TensorFlow is C API functions (TF_*), no C++ ABI."""
    lib = os.path.join(os.path.dirname(sparktf.__file__), "libsparktf_tf_ops.so")
    defined = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True,
                             text=True, check=True).stdout
    assert [line for line in defined.splitlines() if line.strip()] == []
    undefined = subprocess.run(["nm", "-D", "--undefined-only", lib], capture_output=True,
                               text=True, check=True).stdout.split()
    from_tf = {s for s in undefined if s.startswith("TF_")}
    assert {"TF_RegisterOpDefinition", "TF_AllocateOutput", "TF_RegisterKernelBuilder"} <= from_tf
    for marker in ("tensorflow", "google8protobuf", "absl"):
        assert not [s for s in undefined if marker in s], undefined
