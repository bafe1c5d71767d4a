"""TFoS programs through sparktf.compat on a real multi-executor Spark: TFoS's own
TFCluster tests, TFParallel, the Keras switch, the Spark ML stages and streaming."""

import glob
import json
import os

import compat_funs
import numpy as np
import pytest
from test_cluster_spark import wait_no_node_processes

from sparktf import errors

pytestmark = pytest.mark.spark


@pytest.fixture
def no_leftover_nodes():
    yield
    assert wait_no_node_processes() == []


def _results(out, prefix):
    return {int(os.path.basename(p)[len(prefix) + 1:-5]): json.load(open(p))
            for p in glob.glob(os.path.join(out, f"{prefix}-*.json"))}


def test_tfos_inference_test_with_datafeed_of_ctx_mgr(spark, no_leftover_nodes):
    """TFoS's tests/test_TFCluster.py test_inputmode_spark, with the import changed."""
    from sparktf.compat import TFCluster

    sc = spark.sparkContext
    rdd = sc.parallelize([[x] for x in range(1000)], 10)
    cluster = TFCluster.run(sc, compat_funs.squares_with_datafeed, tf_args={},
                            num_executors=2, num_ps=0, input_mode=TFCluster.InputMode.SPARK)
    rdd_out = cluster.inference(rdd)
    assert rdd_out.sum() == sum(x * x for x in range(1000))
    cluster.shutdown()


@pytest.mark.parametrize("fun,release", [("port_released", True), ("port_unreleased", False)])
def test_tfos_port_tests(spark, fun, release, no_leftover_nodes):
    """TFoS's test_port_released / test_port_unreleased."""
    from sparktf.compat import TFCluster

    cluster = TFCluster.run(spark.sparkContext, getattr(compat_funs, fun), tf_args={},
                            num_executors=2, num_ps=0, master_node="chief",
                            release_port=release)
    cluster.shutdown(timeout=120)


def test_tfparallel_runs_alone_and_names_a_failed_run(spark, tmp_path, no_leftover_nodes):
    from sparktf.compat import TFParallel

    sc = spark.sparkContext
    out = str(tmp_path)
    TFParallel.run(sc, compat_funs.parallel_sum, {"x": 1, "y": 2, "out": out}, 3,
                   use_barrier=False)
    runs = _results(out, "run")
    assert sorted(runs) == [0, 1, 2]
    assert all(r["sum"] == 3 and r["tf_config"] is None and r["num_workers"] == 3
               for r in runs.values())
    assert sorted(r["worker_num"] for r in runs.values()) == [0, 1, 2]
    with pytest.raises(errors.Aborted, match="run 1 failed on purpose") as e:
        TFParallel.run(sc, compat_funs.parallel_sum,
                       {"x": 1, "y": 2, "out": out, "fail_on": 1}, 3)
    assert "ValueError" in str(e.value)


def test_keras3_under_multi_worker_strategy_is_refused_before_training(spark, tmp_path,
                                                                     no_leftover_nodes):
    """sparktf's own run keeps Keras 3 unless told; fit under MWMS then fails at once,
    naming the cause and the switch (not a PerReplica error deep in Keras)."""
    from sparktf import TFCluster

    cluster = TFCluster.run(spark.sparkContext, compat_funs.keras_fit_under_mwms,
                            {"out": str(tmp_path)}, 2, legacy_keras=False)
    with pytest.raises(errors.Aborted) as e:
        cluster.shutdown(timeout=300)
    message = str(e.value)
    assert "cannot train across workers" in message and "legacy_keras=True" in message
    assert "PerReplica" not in message
    assert _results(str(tmp_path), "keras") == {}


def test_tfos_keras_code_trains_under_mwms_through_compat(spark, tmp_path, no_leftover_nodes):
    from sparktf.compat import TFCluster

    cluster = TFCluster.run(spark.sparkContext, compat_funs.keras_fit_under_mwms,
                            {"out": str(tmp_path)}, 2)
    cluster.shutdown(timeout=300)
    runs = _results(str(tmp_path), "keras")
    assert sorted(runs) == [0, 1]
    assert all(r["keras"] == "tf_keras" and r["steps"] == 1 for r in runs.values())


def test_dstreams_are_refused_with_the_structured_streaming_way(spark, no_leftover_nodes):
    from pyspark.streaming import StreamingContext

    from sparktf.compat import TFCluster

    sc = spark.sparkContext
    cluster = TFCluster.run(sc, compat_funs.squares_with_datafeed, {}, 2,
                            input_mode=TFCluster.InputMode.SPARK)
    try:
        ssc = StreamingContext(sc, 1)
        stream = ssc.queueStream([sc.parallelize([[1]])])
        with pytest.raises(errors.Unimplemented, match="readStream"):
            cluster.train(stream)
        with pytest.raises(errors.Unimplemented, match="Structured Streaming"):
            cluster.shutdown(ssc)
    finally:
        cluster.shutdown(timeout=120)
