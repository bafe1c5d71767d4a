"""sparktf.compat without Spark: TFoS 2.2.5's public names, its path rules, and the
helpers that TFoS's examples and tests call."""

import getpass
import importlib
import os

import pytest

from sparktf import errors

# Every public name of TFoS 2.2.5's modules (read from its sdist on PyPI).
TFOS_NAMES = {
    "TFCluster": ["tf_status", "InputMode", "TFCluster", "run"],
    "TFManager": ["TFManager", "mgr", "qdict", "kdict", "start", "connect"],
    "TFNode": ["hdfs_path", "start_cluster_server", "next_batch", "export_saved_model",
               "release_port", "batch_results", "terminate", "DataFeed"],
    "TFParallel": ["run"],
    "TFSparkNode": ["TFNodeContext", "TFSparkNode", "run", "train", "inference", "shutdown"],
    "compat": ["export_saved_model", "disable_auto_shard", "is_gpu_available"],
    "dfutil": ["loadedDF", "isLoadedDF", "saveAsTFRecords", "loadTFRecords", "toTFExample",
               "infer_schema", "fromTFExample"],
    "gpu_info": ["MAX_RETRIES", "AS_STRING", "AS_LIST", "is_gpu_available", "get_gpus"],
    "marker": ["Marker", "EndPartition"],
    "pipeline": ["TFTypeConverters", "HasBatchSize", "HasClusterSize", "HasEpochs",
                 "HasGraceSecs", "HasInputMapping", "HasInputMode", "HasMasterNode",
                 "HasModelDir", "HasNumPS", "HasOutputMapping", "HasProtocol", "HasReaders",
                 "HasSteps", "HasTensorboard", "HasTFRecordDir", "HasExportDir",
                 "HasSignatureDefKey", "HasTagSet", "Namespace", "TFParams", "TFEstimator",
                 "TFModel", "pred_fn", "global_sess", "global_args", "global_model",
                 "single_node_env", "get_meta_graph_def", "yield_batch"],
    "reservation": ["TFOS_SERVER_PORT", "TFOS_SERVER_HOST", "BUFSIZE", "MAX_RETRIES",
                    "Reservations", "MessageSocket", "Server", "Client"],
    "util": ["single_node_env", "get_ip_address", "find_in_path", "write_executor_id",
             "read_executor_id"],
}


@pytest.mark.parametrize("module", sorted(TFOS_NAMES))
def test_every_public_name_of_tfos_exists(module):
    m = importlib.import_module(f"sparktf.compat.{module}")
    assert [n for n in TFOS_NAMES[module] if not hasattr(m, n)] == []


def test_from_sparktf_compat_import_works_as_tfos_examples_write_it():
    from sparktf.compat import TFCluster, TFNode, compat, dfutil  # noqa: F401
    from sparktf.compat.pipeline import TFEstimator, TFModel  # noqa: F401

    assert callable(compat.export_saved_model) and callable(TFNode.DataFeed)
    assert TFCluster.InputMode.SPARK == 1 and TFCluster.InputMode.TENSORFLOW == 0


def test_hdfs_path_as_tfos_resolves_it():
    """TFoS's own table (tests/test_TFNode.py), with a context that has only defaultFS
    and working_dir."""
    from sparktf.compat import TFNode

    cwd, user = os.getcwd(), getpass.getuser()
    fs = ["file://", "hdfs://", "viewfs://"]
    paths = {
        "hdfs://foo/bar": ["hdfs://foo/bar"] * 3,
        "viewfs://foo/bar": ["viewfs://foo/bar"] * 3,
        "file://foo/bar": ["file://foo/bar"] * 3,
        "/foo/bar": ["file:///foo/bar", "hdfs:///foo/bar", "viewfs:///foo/bar"],
        "foo/bar": [f"file://{cwd}/foo/bar", f"hdfs:///user/{user}/foo/bar",
                    f"viewfs:///user/{user}/foo/bar"],
    }
    for i, default_fs in enumerate(fs):
        ctx = type("MockContext", (), {"defaultFS": default_fs, "working_dir": cwd})
        for path, expected in paths.items():
            assert TFNode.hdfs_path(ctx, path) == expected[i], (default_fs, path)
    ctx = type("C", (), {"defaultFS": "hdfs://nn:8020/", "working_dir": cwd})
    assert TFNode.hdfs_path(ctx, "/a") == "hdfs://nn:8020/a"


@pytest.mark.parametrize("call,hint", [
    (lambda T: T.start_cluster_server(None), "MultiWorkerMirroredStrategy"),
    (lambda T: T.export_saved_model(None, "/x", "serve", {}), "export_model"),
    (lambda T: T.next_batch(None, 10), "DataFeed(ctx.mgr"),
    (lambda T: T.batch_results(None, []), "DataFeed(ctx.mgr"),
    (lambda T: T.terminate(None), "DataFeed(ctx.mgr"),
])
def test_tf1_and_deprecated_tfnode_helpers_say_what_to_use(call, hint):
    from sparktf.compat import TFNode

    with pytest.raises(errors.Unimplemented) as e:
        call(TFNode)
    assert hint in str(e.value)


@pytest.mark.parametrize("module,name", [("TFManager", "start"), ("reservation", "Server"),
                                         ("TFSparkNode", "train"), ("reservation", "Client")])
def test_tfos_internals_raise_with_what_replaces_them(module, name):
    m = importlib.import_module(f"sparktf.compat.{module}")
    with pytest.raises(errors.Unimplemented, match="TFCluster|DataFeed|coordinator"):
        getattr(m, name)("x")


def test_datafeed_needs_the_nodes_mgr():
    from sparktf.compat import TFNode

    with pytest.raises(errors.InvalidArgument, match="ctx.mgr"):
        TFNode.DataFeed(object(), True)


def test_tfnodecontext_takes_tfos_arguments():
    from sparktf.compat.TFSparkNode import TFNodeContext

    spec = {"chief": ["h:1"], "worker": ["h:2", "h:3"], "ps": ["h:4"]}
    ctx = TFNodeContext(2, "worker", 1, spec, "hdfs://nn:8020", "/w")
    assert (ctx.executor_id, ctx.worker_num, ctx.job_name, ctx.task_index) == (2, 2, "worker", 1)
    assert ctx.num_workers == 3
    assert ctx.absolute_path("x") == f"hdfs://nn:8020/user/{getpass.getuser()}/x"
    assert ctx.tmp_socket is None  # no port reserved outside a node
    assert ctx.mgr.get("state") == "running"
    with pytest.raises(errors.Unimplemented, match="get_data_feed"):
        ctx.mgr.get_queue("input")


def test_util_helpers(tmp_path, monkeypatch):
    from sparktf.compat import util

    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="write_executor_id"):
        util.read_executor_id()
    util.write_executor_id(7)
    assert util.read_executor_id() == 7
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tool").write_text("")
    assert util.find_in_path(f"/nonexistent{os.pathsep}{tmp_path}/bin", "tool") == \
        f"{tmp_path}/bin/tool"
    assert util.find_in_path(str(tmp_path), "tool") is False
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.9")
    assert util.get_ip_address() == "127.0.0.9"
    util.single_node_env(1)  # no GPU on this machine: none visible
    assert os.environ["CUDA_VISIBLE_DEVICES"] == ""


def test_gpu_info_without_gpus():
    from sparktf.compat import gpu_info

    assert gpu_info.is_gpu_available() is False
    with pytest.raises(errors.ResourceExhausted, match="1 GPU"):
        gpu_info.get_gpus(1)


def test_yield_batch_and_namespace():
    from sparktf.compat import pipeline

    rows = [(i, bytearray(b"x"), -i) for i in range(5)]
    batches = list(pipeline.yield_batch(iter(rows + [None, (9, 9, 9)]), 2, 3))
    assert [len(b[0]) for b in batches] == [2, 2, 1]
    assert batches[0] == [[0, 1], ["bytearray(b'x')"] * 2, [0, -1]]
    ns = pipeline.Namespace({"a": 1})
    assert ns.a == 1 and "a" in ns and pipeline.Namespace(["--x", "1"]).argv == ["--x", "1"]
    with pytest.raises(errors.InvalidArgument):
        pipeline.Namespace(3)


def test_dfutil_example_helpers_keep_tfoss_types():
    import tensorflow as tf

    from sparktf.compat import dfutil

    rows = [{"a": 3, "f": 0.5, "s": "hé", "b": b"\x00\x01", "v": [1.0, 2.0]}]
    to = dfutil.toTFExample([("a", "bigint"), ("f", "double"), ("s", "string"),
                             ("b", "binary"), ("v", "array<float>")])
    pairs = list(to(iter(rows)))
    assert isinstance(pairs[0][0], bytearray) and pairs[0][1] is None
    example = tf.train.Example.FromString(bytes(pairs[0][0]))
    schema = dfutil.infer_schema(example, binary_features=["b"])
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == [
        ("a", "bigint"), ("b", "binary"), ("f", "double"), ("s", "string"),
        ("v", "array<double>")]
    (row,) = dfutil.fromTFExample(iter(pairs), binary_features=["b"])
    assert row.a == 3 and row.s == "hé" and row.b == bytearray(b"\x00\x01")
    assert row.f == pytest.approx(0.5) and row.v == pytest.approx([1.0, 2.0])
    with pytest.raises(TypeError, match="map<string,int>"):
        dfutil.toTFExample([("m", "map<string,int>")])


def test_keras_switch_environment(monkeypatch):
    from sparktf import keras_version as kv

    monkeypatch.delenv("TF_USE_LEGACY_KERAS", raising=False)
    assert kv.node_env(True) == {"TF_USE_LEGACY_KERAS": "1"}
    assert kv.node_env(False) == {"TF_USE_LEGACY_KERAS": "0", kv.CHECK_ENV: "1"}
    # default: an executor-side TF_USE_LEGACY_KERAS (spark.executorEnv) is not overridden
    assert kv.node_env(None) == {kv.CHECK_ENV: "1"}
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    assert kv.node_env(None) == {"TF_USE_LEGACY_KERAS": "1"}
