"""sparktf.pipeline (TFoS's TFEstimator / TFModel) on a real multi-executor Spark: fit
through the cluster runtime, transform from the SavedModel on the executors, save and
load, Pipeline and TrainValidationSplit, and streaming DataFrames."""

import glob
import json
import os

import compat_funs
import feed_funs
import numpy as np
import pytest
from test_cluster_spark import wait_no_node_processes

from sparktf import errors

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def digits_frames(spark):
    from sklearn.datasets import load_digits

    d = load_digits()
    rows = [(x.astype(float).tolist(), int(y)) for x, y in zip(d.data, d.target)]
    train = spark.createDataFrame(rows[:1500], "image array<float>, label long").repartition(4)
    test = spark.createDataFrame(rows[1500:], "image array<float>, label long")
    return train.cache(), test.cache()


def _accuracy(df):
    rows = df.select("label", "prediction").collect()
    return float(np.mean([int(np.argmax(r.prediction)) == r.label for r in rows]))


def _estimator(tmp_path, cluster_size=2, epochs=6):
    from sparktf.compat.pipeline import TFEstimator

    args = {"out": str(tmp_path), "note": "from tf_args"}
    return (TFEstimator(compat_funs.digits_estimator_train, args)
            .setInputMapping({"image": "image", "label": "label"})
            .setOutputMapping({"probs": "prediction"})
            .setClusterSize(cluster_size).setEpochs(epochs).setBatchSize(64)
            .setExportDir(str(tmp_path / "export")).setGraceSecs(0))


def test_fit_trains_on_the_cluster_and_transform_predicts_on_executors(
        spark, tmp_path, digits_frames):
    train, test = digits_frames
    est = _estimator(tmp_path)
    with pytest.warns(UserWarning, match="protocol='rdma' is ignored"):
        model = est.setProtocol("rdma").fit(train)
    runs = [json.load(open(p)) for p in glob.glob(str(tmp_path / "train-*.json"))]
    # params reach train_fn merged into tf_args, TFoS's way
    assert sorted((r["epochs"], r["batch_size"], r["steps"], r["note"]) for r in runs) == \
        [(6, 64, 1000, "from tf_args")] * 2
    assert model.getExportDir() == str(tmp_path / "export")
    out = model.transform(test)
    assert out.columns == ["image", "label", "prediction"]
    assert out.schema["prediction"].dataType.simpleString() == "array<float>"
    assert out.count() == test.count() == 297
    assert _accuracy(out) > 0.85
    assert wait_no_node_processes() == []

    # save and load both stages: same params, same predictions
    est.write().overwrite().save(str(tmp_path / "est"))
    model.write().overwrite().save(str(tmp_path / "model"))
    from sparktf.compat.pipeline import TFEstimator, TFModel

    est2 = TFEstimator.load(str(tmp_path / "est"))
    assert (est2.getClusterSize(), est2.getEpochs(), est2.getInputMapping()) == \
        (2, 6, {"image": "image", "label": "label"})
    assert est2.train_fn.__name__ == "digits_estimator_train"
    assert est2.args.note == "from tf_args"
    model2 = TFModel.load(str(tmp_path / "model"))
    a = [r.prediction for r in out.collect()]  # test is cached: the same order each time
    b = [r.prediction for r in model2.transform(test).collect()]
    assert np.allclose(np.array(a), np.array(b))


def test_in_a_pipeline_and_tuned_by_train_validation_split(spark, tmp_path, digits_frames):
    from pyspark.ml import Pipeline
    from pyspark.ml.evaluation import Evaluator
    from pyspark.ml.tuning import ParamGridBuilder, TrainValidationSplit

    class Accuracy(Evaluator):
        def _evaluate(self, dataset):
            return _accuracy(dataset)

    train, test = digits_frames
    est = _estimator(tmp_path, cluster_size=1, epochs=1)
    grid = ParamGridBuilder().addGrid(est.epochs, [1, 8]).build()
    tvs = TrainValidationSplit(estimator=est, estimatorParamMaps=grid, evaluator=Accuracy(),
                               trainRatio=0.8, seed=7)
    fitted = Pipeline(stages=[tvs]).fit(train)
    tuned = fitted.stages[0]
    assert len(tuned.validationMetrics) == 2
    assert tuned.validationMetrics[1] > tuned.validationMetrics[0]  # 8 epochs beat 1
    assert int(np.argmax(tuned.validationMetrics)) == 1  # the best model is the 8-epoch one
    assert _accuracy(fitted.transform(test)) > 0.85
    assert wait_no_node_processes() == []


@pytest.fixture(scope="module")
def doubling_model(tmp_path_factory):
    """A SavedModel made on the driver: x (3 floats) -> doubled (x * 2) and total (sum)."""
    import tensorflow as tf

    class Doubler(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32, name="x")])
        def serve(self, x):
            return {"doubled": x * 2.0, "total": tf.reduce_sum(x, axis=1)}

    path = str(tmp_path_factory.mktemp("doubler") / "export")
    m = Doubler()
    tf.saved_model.save(m, path, signatures={"serving_default": m.serve})
    return path


def _doubler(path):
    from sparktf.pipeline import TFModel

    return (TFModel({}).setExportDir(path).setBatchSize(7)
            .setInputMapping({"features": "x"})
            .setOutputMapping({"doubled": "d", "total": "t"}))


def test_transform_keeps_columns_and_order_in_batches_of_batch_size(spark, doubling_model):
    rows = [(i, [float(i), 1.0, -1.0]) for i in range(50)]
    df = spark.createDataFrame(rows, "id long, features array<double>").repartition(3)
    out = _doubler(doubling_model).transform(df).orderBy("id").collect()
    assert [r.id for r in out] == list(range(50))
    assert all(r.d == [2.0 * r.id, 2.0, -2.0] and r.t == pytest.approx(float(r.id))
               for r in out)


def test_transform_errors_name_what_the_model_has(spark, doubling_model, tmp_path):
    df = spark.createDataFrame([(1, [1.0, 2.0, 3.0])], "id long, features array<double>")
    with pytest.raises(errors.InvalidArgument, match=r"outputs \['doubled', 'total'\]"):
        _doubler(doubling_model).setOutputMapping({"nope": "n"}).transform(df)
    with pytest.raises(errors.InvalidArgument, match="feeds none of"):
        _doubler(doubling_model).setInputMapping({"features": "y"}).transform(df)
    with pytest.raises(errors.InvalidArgument, match="columns \\['missing'\\]"):
        _doubler(doubling_model).setInputMapping({"missing": "x"}).transform(df)
    with pytest.raises(errors.NotFound, match="no SavedModel"):
        _doubler(str(tmp_path / "none")).transform(df)
    with pytest.raises(errors.InvalidArgument, match="no signature 'other'"):
        _doubler(doubling_model).setSignatureDefKey("other").transform(df)


def test_transform_on_a_streaming_dataframe(spark, doubling_model, tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for k in range(2):
        spark.createDataFrame([(k * 10 + i, [1.0, 2.0, float(i)]) for i in range(10)],
                              "id long, features array<double>").write.json(str(src / f"b{k}"))
    stream = spark.readStream.schema("id long, features array<double>").json(str(src / "*"))
    query = (_doubler(doubling_model).transform(stream).writeStream.format("memory")
             .queryName("doubled_stream").trigger(availableNow=True).start())
    query.awaitTermination(120)
    got = spark.sql("select id, t from doubled_stream").collect()
    assert sorted(r.id for r in got) == list(range(20))
    assert all(r.t == pytest.approx(3.0 + r.id % 10) for r in got)


def test_a_streaming_dataframe_feeds_a_running_cluster(spark, tmp_path):
    from sparktf import TFCluster

    src = tmp_path / "in"
    src.mkdir()
    schema = "x double, y double"
    cluster = TFCluster.run(spark.sparkContext, feed_funs.count_rows,
                            {"out": str(tmp_path), "batch": 10}, 2,
                            input_mode=TFCluster.InputMode.SPARK)
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).json(str(src))
    query = cluster.train(stream)
    expected = 0.0
    for k in range(3):  # micro-batches as files arrive
        rows = [(float(k * 100 + i), 0.0) for i in range(40)]
        expected += sum(r[0] for r in rows)
        spark.createDataFrame(rows, schema).coalesce(1).write.json(str(src / f"part{k}"))
        os.replace(next(iter(glob.glob(str(src / f"part{k}" / "*.json")))),
                   str(src / f"f{k}.json"))
        query.processAllAvailable()
    assert query.exception() is None
    query.stop()
    cluster.shutdown(timeout=120)
    seen = [json.load(open(p)) for p in glob.glob(str(tmp_path / "node-*.json"))]
    assert sum(r["rows"] for r in seen) == 120
    assert sum(r["sum"] for r in seen) == pytest.approx(expected)
    assert wait_no_node_processes() == []


def test_fit_in_tensorflow_mode_writes_tfrecords_for_train_fn(spark, tmp_path, digits_frames):
    from sparktf.compat import dfutil
    from sparktf.compat.pipeline import TFEstimator

    train, _ = digits_frames
    expected = (train.count(), sum(r.label for r in train.select("label").collect()))
    est = (TFEstimator(compat_funs.count_tfrecords, {"out": str(tmp_path)})
           .setInputMapping({"image": "image", "label": "label"}).setInputMode(0)
           .setClusterSize(1).setGraceSecs(0))
    with pytest.raises(errors.InvalidArgument, match="setTFRecordDir"):
        est.fit(train)
    est.setTFRecordDir(str(tmp_path / "tfr")).fit(train)
    (run,) = [json.load(open(p)) for p in glob.glob(str(tmp_path / "tfr-*.json"))]
    assert (run["rows"], run["label_sum"]) == expected
    # a DataFrame read with loadTFRecords is trained on from its own files
    loaded = dfutil.loadTFRecords(spark.sparkContext, str(tmp_path / "tfr"))
    assert dfutil.isLoadedDF(loaded) and not dfutil.isLoadedDF(train)
    os.remove(glob.glob(str(tmp_path / "tfr-*.json"))[0])
    est.setTFRecordDir(str(tmp_path / "unused")).fit(loaded)
    (run,) = [json.load(open(p)) for p in glob.glob(str(tmp_path / "tfr-*.json"))]
    assert run["dir"] == str(tmp_path / "tfr") and run["rows"] == expected[0]
    assert not os.path.exists(tmp_path / "unused")
    assert wait_no_node_processes() == []
