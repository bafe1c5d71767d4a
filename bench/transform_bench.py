"""Batched inference on a DataFrame from a SavedModel: sparktf's TFModel.transform next to
Spark's own pyspark.ml.functions.predict_batch_udf and TensorFlowOnSpark 2.2.5's
TFModel.transform (its own venv, .venv-tfos: see bench/setup_tfos_venv.sh).

Same machine, same run, same Spark (pyspark 4.3.0, local-cluster[2,1,2048]), same
SavedModel (an MLP, width -> 256 -> 10, serving_default: x -> probs) and the same cached
DataFrame (`--rows` rows of `--width` float32 values, 4 partitions, read from one Parquet
file): 784 as MNIST's images, 16 as a tabular row of features.
Each method runs in its own driver process; rounds are interleaved; a round transforms
the whole DataFrame and writes it to Spark's "noop" sink, after one warm-up round that
loads the model in every Python worker. Prints the median rows/s of each and the ratios,
and those of an Arrow UDF that runs no model at all (what Spark's JVM side costs to hand
this column to Python: the floor of any Python-side inference).

Usage: .venv/bin/python bench/transform_bench.py [--rows 60000] [--rounds 3] [--width 784]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_inputs(work: str, rows: int, width: int) -> tuple[str, str]:
    """The SavedModel and the Parquet file every method reads."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    import tensorflow as tf

    class MLP(tf.Module):
        def __init__(self):
            rng = np.random.default_rng(0)
            self.w1 = tf.Variable(rng.normal(0, 0.05, (width, 256)).astype(np.float32))
            self.w2 = tf.Variable(rng.normal(0, 0.05, (256, 10)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, width], tf.float32, name="x")])
        def serve(self, x):
            return {"probs": tf.nn.softmax(tf.nn.relu(x @ self.w1) @ self.w2)}

    model_dir = os.path.join(work, "model")
    m = MLP()
    tf.saved_model.save(m, model_dir, signatures={"serving_default": m.serve})
    data = np.random.default_rng(1).random((rows, width), dtype=np.float32)
    col = pa.FixedSizeListArray.from_arrays(pa.array(data.reshape(-1)), width).cast(
        pa.list_(pa.float32()))
    path = os.path.join(work, "images.parquet")
    pq.write_table(pa.table({"id": pa.array(np.arange(rows)), "image": col}), path)
    return model_dir, path


def run_method(method: str, model_dir: str, data: str, rounds: int, width: int) -> list[float]:
    """In this process (the method's own driver): seconds per round."""
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local-cluster[2,1,2048]")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.parquet(data).repartition(4).cache()
    df.count()
    if method == "sparktf":
        from sparktf.pipeline import TFModel

        model = (TFModel({}).setExportDir(model_dir).setBatchSize(1000)
                 .setInputMapping({"image": "x"}).setOutputMapping({"probs": "prediction"}))
        out = model.transform(df)
    elif method == "predict_batch_udf":
        from pyspark.ml.functions import predict_batch_udf
        from pyspark.sql.types import ArrayType, FloatType

        def make_predict_fn():
            import tensorflow as tf

            fn = tf.saved_model.load(model_dir).signatures["serving_default"]

            def predict(x):
                return fn(x=tf.constant(x))["probs"].numpy()

            return predict

        udf = predict_batch_udf(make_predict_fn, return_type=ArrayType(FloatType()),
                                batch_size=1000, input_tensor_shapes=[[width]])
        out = df.withColumn("prediction", udf("image"))
    elif method == "arrow_floor":  # what any Arrow UDF on this column costs: no model
        import numpy as np
        import pyarrow as pa
        from pyspark.sql.functions import ArrowUDFType, arrow_udf

        def zeros(batches):
            for a in batches:
                yield pa.array(np.zeros(len(a), np.float32))

        out = df.withColumn("prediction", arrow_udf(
            zeros, returnType="float", functionType=ArrowUDFType.SCALAR_ITER)("image"))
    else:  # TensorFlowOnSpark 2.2.5
        from tensorflowonspark.pipeline import TFModel

        model = (TFModel({}).setExportDir(model_dir).setBatchSize(1000).setTagSet("serve")
                 .setSignatureDefKey("serving_default").setInputMapping({"image": "x"})
                 .setOutputMapping({"probs": "prediction"}))
        out = model.transform(df)
    times = []
    for _ in range(rounds + 1):  # the first loads the model in every Python worker
        t0 = time.perf_counter()
        out.write.format("noop").mode("overwrite").save()
        times.append(time.perf_counter() - t0)
    spark.stop()
    return times[1:]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=60000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--width", type=int, default=784, help="float32 values per row")
    ap.add_argument("--tfos-python", default=os.path.join(ROOT, ".venv-tfos", "bin", "python"))
    ap.add_argument("--worker", nargs=5, metavar=("METHOD", "MODEL", "DATA", "ROUNDS", "WIDTH"))
    args = ap.parse_args()
    if args.worker:
        method, model_dir, data, rounds, width = args.worker
        print(json.dumps(run_method(method, model_dir, data, int(rounds), int(width))))
        return
    pythons = {"sparktf": sys.executable, "predict_batch_udf": sys.executable,
               "tfos": args.tfos_python, "arrow_floor": sys.executable}
    if not os.path.exists(args.tfos_python):
        sys.exit(f"no {args.tfos_python}: run bench/setup_tfos_venv.sh first")
    work = tempfile.mkdtemp(prefix="sparktf-transform-bench-")
    model_dir, data = make_inputs(work, args.rows, args.width)
    per_round = {k: [] for k in pythons}
    for r in range(args.rounds):  # one driver per method per round, interleaved
        for method, python in pythons.items():
            p = subprocess.run([python, os.path.abspath(__file__), "--worker", method,
                                model_dir, data, "1", str(args.width)], capture_output=True,
                               text=True, timeout=3600,
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
            if p.returncode != 0:
                sys.exit(f"{method} failed:\n{p.stderr[-4000:]}")
            seconds = json.loads(p.stdout.strip().splitlines()[-1])[0]
            per_round[method].append(args.rows / seconds)
            print(f"round {r + 1}: {method}: {args.rows / seconds:,.0f} rows/s", flush=True)
    med = {k: statistics.median(v) for k, v in per_round.items()}
    print(f"\nmedian rows/s over {args.rounds} rounds, {args.rows} rows of {args.width} floats:")
    for k, v in med.items():
        print(f"  {k}: {v:,.0f}")
    print(f"sparktf / predict_batch_udf: **{med['sparktf'] / med['predict_batch_udf']:.2f}x** "
          f"(target 1.0x); sparktf / TFoS: **{med['sparktf'] / med['tfos']:.1f}x** (target 5x); "
          f"an Arrow UDF that runs no model (the floor of the JVM's side): "
          f"{med['arrow_floor'] / med['tfos']:.1f}x TFoS")
    raw = os.path.join(ROOT, "bench", "raw", "transform.jsonl")
    with open(raw, "a") as f:
        f.write(json.dumps({"rows": args.rows, "width": args.width,
                            "rows_per_s": per_round}) + "\n")


if __name__ == "__main__":
    main()
