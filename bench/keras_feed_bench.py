"""Training a Keras model fed from a Spark DataFrame: steps per second of
model.fit(ctx.dataset(batch)) on a sparktf node fed by cluster.train(df), next to the
same model fit on the same rows already in memory as
tf.data.Dataset.from_tensor_slices (the ceiling: no feed at all).

Same machine, same run: a small MLP (784 -> 128 -> 10, Adam, sparse categorical
cross-entropy), batches of 256, `--rows` rows of 784 float32 values and an int label
(a cached DataFrame with an array<float> column, made in the JVM, 8 partitions). sparktf
runs one node on local-cluster[2,1,2048] (the executors feed it through the JVM feeder
while it trains, on the same 2 cores); the baseline runs in a plain Python process with
the same threads. Also Spark's own cost of reading the cached rows (toRdd().count() in the
executors, no feed): what a feed through Spark's scan of the cache pays on the shared cores
before it does anything (the JVM feeder reads this DataFrame from the cache's column
buffers instead, docs/architecture.md). Each side runs in a fresh process per round,
rounds interleaved; steps/s is measured by a Keras callback from the end of the first 20
steps (TensorFlow's tracing and the first batches) to the last step. The feed's op in
Next: the share of the timed span that ctx.dataset's reading op spent in
DataFeed.next (the feed's wait_us), on tf.data's prefetch thread, so it overlaps training.
Input stall, an estimate of the time training waited for a batch: per step, the op's time in
Next beyond what the prefetched batches (sparktf.node.DATASET_PREFETCH) cover, at the mean
step time, summed over the timed span.

With --pin, training gets a core of its own, as on a machine where the executors'
cores are not the trainer's: the baseline runs on CPU 0 alone; sparktf's driver, its
executors, their Python workers and the node's agent on CPU 1, and the node's TF process
moves itself to CPU 0 before it builds the model.

With --tf-threads N, both sides set TensorFlow's intra-op threads to N.

The JVM feeder's tasks yield to training while they feed (docs/architecture.md, "Feeding
beside training"): their threads and their JVMs' JIT compilers at SCHED_BATCH. The run
checks that every partition was fed so (train()'s yielded_partitions) and reports the
policies the executor JVMs' compiler and task threads were seen at (looked at every
0.25 s). With --compare-sched, each round also runs sparktf with SPARKTF_FEEDER_SCHED=normal
(nothing yields), side by side.

With --executors-idle [REGEX] (an experiment; it needs root, CAP_SYS_NICE): while sparktf's
side runs, every thread of the executor JVMs whose name (/proc/TID/comm, 15 characters)
matches REGEX (all threads when it is left out) is moved to SCHED_IDLE every 0.3 s (it runs
only on a core no other thread wants; with --executors-policy batch, to SCHED_BATCH instead:
a fair share, but it does not preempt a running thread when it wakes) and the node's TF
process is kept at SCHED_OTHER (a process started from an idle thread inherits SCHED_IDLE,
and only CAP_SYS_NICE may leave it). This asks whether the executors' CPU, not the feed's
design, is what training loses on shared cores.

CPU in the timed span: every process on the machine is sampled (/proc/PID/stat, every
0.1 s) while a side runs; the CPU time each used between the samples nearest the span's
start and end, over the span, is reported in cores by kind (the trainer, the executor
JVMs, the node agent, ...), so the gap on shared cores is accounted for, not guessed.

Usage: .venv/bin/python bench/keras_feed_bench.py [--rows 120000] [--rounds 3] [--pin]
       [--tf-threads N] [--epochs N] [--compare-sched]
       [--executors-idle [REGEX]] [--executors-policy idle|batch]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

NO_YIELD = "sparktf, SPARKTF_FEEDER_SCHED=normal"
BATCH = 256
WARM_STEPS = 20
WIDTH = 784
PARTITIONS = 8


def set_tf_threads(n: int) -> None:
    """TensorFlow's intra-op threads (0: its default); before TensorFlow runs anything."""
    import tensorflow as tf

    if n:
        tf.config.threading.set_intra_op_parallelism_threads(n)


def model():
    import tensorflow as tf

    m = tf.keras.Sequential([tf.keras.Input((WIDTH,)),
                             tf.keras.layers.Dense(128, activation="relu"),
                             tf.keras.layers.Dense(10)])
    m.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


class CpuSampler:
    """Samples every process's CPU time (utime + stime, clock ticks) every `period` s in a
    daemon thread; cores(t0, t1, kinds) gives the cores each kind used between the samples
    nearest t0 and t1 (wall clock, time.time())."""

    TICK = os.sysconf("SC_CLK_TCK")

    def __init__(self, period: float = 0.1):
        self.samples, self.cmdlines, self.period = [], {}, period
        self.stopped = threading.Event()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        n = 0
        while not self.stopped.is_set():
            now, ticks = time.time(), {}
            # every second, each process's command line again: a process forked a moment
            # ago still shows its parent's, and spark-submit's script execs the JVM later
            reread, n = n % 10 == 0, n + 1
            for name in os.listdir("/proc"):
                if not name.isdigit():
                    continue
                try:
                    with open(f"/proc/{name}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[1].split()
                except OSError:
                    continue
                ticks[name] = int(fields[11]) + int(fields[12])
                if reread or name not in self.cmdlines:
                    try:
                        with open(f"/proc/{name}/cmdline", "rb") as f:
                            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
                    except OSError:  # exited: its last one read stays
                        continue
                    if cmd:  # empty once it is a zombie
                        self.cmdlines[name] = cmd
            self.samples.append((now, ticks))
            self.stopped.wait(self.period)

    def stop(self):
        self.stopped.set()

    def cores(self, t0: float, t1: float, kind) -> dict:
        """{kind: cores used in [t0, t1]}; kind(pid, cmdline) names a process's kind."""
        def nearest(t):
            return min(self.samples, key=lambda s: abs(s[0] - t))

        (a_t, a), (b_t, b) = nearest(t0), nearest(t1)
        used = {}
        for pid, end in b.items():
            k = kind(pid, self.cmdlines.get(pid, ""))
            used[k] = used.get(k, 0.0) + (end - a.get(pid, 0)) / self.TICK / (b_t - a_t)
        return {k: round(v, 3) for k, v in sorted(used.items(), key=lambda kv: -kv[1])
                if v >= 0.005}


def process_kind(trainer_pid: int):
    """A kind(pid, cmdline) for CpuSampler.cores: what a process is in these runs."""
    me = str(os.getpid())

    def kind(pid: str, cmd: str) -> str:
        if pid == str(trainer_pid):
            return "trainer"  # the node's TF process, or the baseline's own
        if pid == me:
            return "driver's Python"
        for needle, name in (("CoarseGrainedExecutorBackend", "executor JVMs"),
                             ("deploy.worker.Worker", "Spark worker JVMs"),
                             ("deploy.master.Master", "Spark master JVM"),
                             ("SparkSubmit", "driver's JVM"), ("pyspark.daemon", "Python workers"),
                             ("pyspark/daemon", "Python workers"), (" agent ", "node agent")):
            if needle in cmd:
                return name
        return "anything else"

    return kind


class StepTimer:
    """A Keras callback: the time of step WARM_STEPS's end and of the last step's; with a
    `feed` (a DataFeed), also its wait_us (the reading op's time in Next) at every step
    from WARM_STEPS on, for feed_time()."""

    def __new__(cls, feed=None):
        import tensorflow as tf

        class Timer(tf.keras.callbacks.Callback):
            def __init__(self):
                super().__init__()
                self.steps, self.t_warm, self.t_end = 0, None, None
                self.wall_warm, self.wall_end = None, None
                self.waits = []  # (perf_counter, wait_us) at the end of each timed step

            def on_train_batch_end(self, batch, logs=None):
                self.steps += 1
                if self.steps == WARM_STEPS:
                    self.t_warm, self.wall_warm = time.perf_counter(), time.time()
                self.t_end, self.wall_end = time.perf_counter(), time.time()
                if feed is not None and self.steps >= WARM_STEPS:
                    self.waits.append((self.t_end, feed.progress().get("wait_us", 0)))

            def rate(self):
                return (self.steps - WARM_STEPS) / (self.t_end - self.t_warm)

            def feed_time(self):
                """(busy, uncovered) over the timed span: the share of it the feed's op
                spent in Next (on tf.data's prefetch thread, so it overlaps training), and
                the share that DATASET_PREFETCH batches cannot have covered: per step, the
                op's time in Next beyond that many mean steps (an estimate of the input
                stall, the time training waited for a batch)."""
                from sparktf import node

                span = self.t_end - self.t_warm
                cover = node.DATASET_PREFETCH * span / (self.steps - WARM_STEPS) * 1e6
                busy = (self.waits[-1][1] - self.waits[0][1]) / 1e6 / span
                uncovered = sum(max(0.0, b[1] - a[1] - cover)
                                for a, b in zip(self.waits, self.waits[1:])) / 1e6 / span
                return busy, uncovered

        return Timer()


class ExecutorsIdle:
    """--executors-idle: a daemon thread that moves the threads of the executor JVMs whose
    names match `pattern` to `policy` ("idle" or "batch") and keeps the node's TF process
    (python -m sparktf.node) at SCHED_OTHER, every 0.3 s until stop(); trainer_policies()
    gives the policies its TF process's threads had at the last look."""

    def __init__(self, pattern: str, policy: str):
        self.pattern = re.compile(pattern)
        self.policy = {"idle": os.SCHED_IDLE, "batch": os.SCHED_BATCH}[policy]
        self.stopped, self.seen, self.trainer = threading.Event(), set(), {}
        self.error = None
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while not self.stopped.is_set():
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    cmd = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
                    tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
                except OSError:
                    continue
                trainer = "sparktf.node" in cmd
                if not trainer and "CoarseGrainedExecutorBackend" not in cmd:
                    continue
                for tid in tids:
                    try:
                        if trainer:
                            if os.sched_getscheduler(tid) != os.SCHED_OTHER:
                                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                            self.trainer[tid] = os.sched_getscheduler(tid)
                        elif tid not in self.seen and self._matches(pid, tid):
                            os.sched_setscheduler(tid, self.policy, os.sched_param(0))
                            self.seen.add(tid)
                    except ProcessLookupError:
                        continue
                    except PermissionError as e:
                        self.error = f"--executors-idle needs root (CAP_SYS_NICE): {e}"
                        return
            self.stopped.wait(0.3)

    def _matches(self, pid: str, tid: int) -> bool:
        try:
            return bool(self.pattern.search(open(f"/proc/{pid}/task/{tid}/comm").read()))
        except OSError:
            return False

    def stop(self):
        self.stopped.set()

    def trainer_policies(self) -> list:
        return sorted(set(self.trainer.values()))


class ExecutorPolicies:
    """Every 0.25 s until stop(), the scheduling policy of each executor JVM thread named as
    HotSpot's JIT compilers ("C1 CompilerThre", "C2 CompilerThre") or Spark's task threads
    ("Executor task l"); shares() gives, per kind, the share of looks at each policy."""

    KINDS = {"C1 CompilerThre": "compiler", "C2 CompilerThre": "compiler",
             "Executor task l": "task"}
    NAMES = {os.SCHED_OTHER: "SCHED_OTHER", os.SCHED_BATCH: "SCHED_BATCH",
             os.SCHED_IDLE: "SCHED_IDLE"}

    def __init__(self):
        self.looks = {"compiler": {}, "task": {}}
        self.stopped = threading.Event()
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while not self.stopped.is_set():
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    if b"CoarseGrainedExecutorBackend" not in open(f"/proc/{pid}/cmdline",
                                                                   "rb").read():
                        continue
                    tids = os.listdir(f"/proc/{pid}/task")
                except OSError:
                    continue
                for tid in tids:
                    try:
                        kind = self.KINDS.get(open(f"/proc/{pid}/task/{tid}/comm").read()[:15])
                        if kind:
                            name = self.NAMES.get(os.sched_getscheduler(int(tid)), "other")
                            self.looks[kind][name] = self.looks[kind].get(name, 0) + 1
                    except OSError:
                        continue
            self.stopped.wait(0.25)

    def stop(self):
        self.stopped.set()

    def shares(self) -> dict:
        return {kind: {p: round(n / sum(seen.values()), 3) for p, n in sorted(seen.items())}
                for kind, seen in self.looks.items() if seen}


def pin_process(cpu: int) -> None:
    """Moves every thread of this process to `cpu` (threads made later inherit it)."""
    for tid in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(tid), {cpu})


def node_fun(args, ctx):
    """map_fun of the sparktf node: fit on the feed, write steps/s and the input stall."""
    if args["pin"]:
        pin_process(0)
    set_tf_threads(args["tf_threads"])
    m = model()
    feed = ctx.get_data_feed()  # for its progress: rows, batches, time spent waiting
    timer = StepTimer(feed)
    before = feed.progress()
    m.fit(ctx.dataset(BATCH, input_mapping={"x": "x", "label": "label"}).map(
        lambda d: (d["x"], d["label"])), epochs=1, verbose=0, callbacks=[timer])
    after = feed.progress()
    busy, uncovered = timer.feed_time()
    with open(os.path.join(args["out"], "result.json"), "w") as f:
        json.dump({"steps_per_s": timer.rate(), "steps": timer.steps,
                   "feed_busy": busy, "stall": uncovered,
                   "reads": {k: after.get(k, 0) - before.get(k, 0)
                             for k in ("in_place", "copied", "evictions")},
                   "span": [timer.wall_warm, timer.wall_end], "trainer_pid": os.getpid(),
                   "trainer_nice": os.getpriority(os.PRIO_PROCESS, 0)}, f)


def cached_df(rows: int):
    """(spark, the benchmark's cached DataFrame) on local-cluster[2,1,2048]."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from sparktf import jvm

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local-cluster[2,1,2048]")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "2g")
             .config("spark.jars", jvm.jar_path()).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    values = [F.rand(i).cast("float") for i in range(WIDTH)]
    df = spark.range(rows, numPartitions=PARTITIONS).select(
        F.array(*values).alias("x"), (F.col("id") % 10).cast("int").alias("label")).cache()
    assert df.count() == rows
    return spark, df


def run_cache_read(rows: int, pin: bool, tf_threads: int, epochs: int) -> dict:
    """Rows/s of Spark alone reading the cached DataFrame's rows in its executors
    (queryExecution().toRdd().count(): no feed, no Python worker), the median of 3 reads
    after an untimed one: the part of the feed's cost that comes from Spark's cache."""
    if pin:
        pin_process(1)
    spark, df = cached_df(rows)
    rdd = df._jdf.queryExecution().toRdd()
    rdd.count()
    rates = []
    for _ in range(3):
        t0 = time.perf_counter()
        assert rdd.count() == rows
        rates.append(rows / (time.perf_counter() - t0))
    spark.stop()
    return {"rows_per_s": statistics.median(rates)}


def run_sparktf(rows: int, pin: bool, tf_threads: int, epochs: int,
                executors_idle: str | None = None, executors_policy: str = "idle") -> dict:
    if pin:  # inherited by the JVMs, the Python workers and the node's agent
        pin_process(1)
    from sparktf import TFCluster

    idler = (ExecutorsIdle(executors_idle, executors_policy) if executors_idle is not None
             else None)
    sampler, policies = CpuSampler(), ExecutorPolicies()
    spark, df = cached_df(rows)
    out = tempfile.mkdtemp()
    cluster = TFCluster.run(spark.sparkContext, node_fun,
                            {"out": out, "pin": pin, "tf_threads": tf_threads}, 1,
                            input_mode=TFCluster.InputMode.SPARK)
    stats = cluster.train(df, num_epochs=epochs)
    cluster.shutdown(timeout=300)
    spark.stop()
    # the JVM feeder, reading the cached DataFrame from Spark's column buffers
    assert stats["feeder"] == "jvm" and stats["cache_partitions"] == PARTITIONS * epochs, stats
    yielding = os.environ.get("SPARKTF_FEEDER_SCHED", "batch") == "batch"
    assert stats["yielded_partitions"] == (PARTITIONS * epochs if yielding else 0), stats
    sampler.stop()
    policies.stop()
    result = json.load(open(os.path.join(out, "result.json")))
    result["cpu"] = sampler.cores(*result["span"], process_kind(result["trainer_pid"]))
    result["executor_policies"] = policies.shares()
    if idler is not None:
        idler.stop()
        if idler.error:
            raise RuntimeError(idler.error)
        result["executors_idle"] = len(idler.seen)
        result["trainer_policies"] = idler.trainer_policies()
        assert idler.seen and idler.trainer_policies() == [os.SCHED_OTHER], result
    return result


def run_memory(rows: int, pin: bool, tf_threads: int, epochs: int) -> dict:
    if pin:
        pin_process(0)
    import numpy as np
    import tensorflow as tf

    set_tf_threads(tf_threads)
    sampler = CpuSampler()
    g = np.random.default_rng(0)
    x = g.random((rows, WIDTH), dtype=np.float32)
    y = (np.arange(rows) % 10).astype(np.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).repeat(epochs).batch(BATCH,
                                                                        drop_remainder=True)
    timer = StepTimer()
    model().fit(ds, epochs=1, verbose=0, callbacks=[timer])
    sampler.stop()
    return {"steps_per_s": timer.rate(), "steps": timer.steps, "stall": None,
            "span": [timer.wall_warm, timer.wall_end],
            "cpu": sampler.cores(timer.wall_warm, timer.wall_end, process_kind(os.getpid()))}


def run(side: str, rows: int, pin: bool, tf_threads: int, epochs: int,
        executors_idle: str | None = None, executors_policy: str = "idle",
        feeder_sched: str = "batch") -> dict:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", SPARKTF_FEEDER_SCHED=feeder_sched)
    cmd = [sys.executable, os.path.abspath(__file__), "--side", side, "--rows", str(rows),
           "--tf-threads", str(tf_threads), "--epochs", str(epochs)]
    if executors_idle is not None and side == "sparktf":
        cmd += ["--executors-idle", executors_idle, "--executors-policy", executors_policy]
    p = subprocess.run(cmd + (["--pin"] if pin else []), capture_output=True, text=True, env=env,
                       cwd=tempfile.gettempdir(), timeout=1800)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{side} failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=120_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pin", action="store_true",
                    help="training on CPU 0 alone, the feed on CPU 1 (both sides)")
    ap.add_argument("--tf-threads", type=int, default=0,
                    help="TensorFlow's intra-op threads on both sides (0: its default)")
    ap.add_argument("--epochs", type=int, default=1,
                    help="epochs of the rows, on both sides, in one fit (a longer timed span)")
    ap.add_argument("--executors-idle", nargs="?", const=".", metavar="REGEX",
                    help="an experiment (root): the executor JVMs' threads whose names match "
                    "REGEX (all by default) at SCHED_IDLE")
    ap.add_argument("--executors-policy", choices=["idle", "batch"], default="idle",
                    help="with --executors-idle: SCHED_IDLE or SCHED_BATCH")
    ap.add_argument("--compare-sched", action="store_true",
                    help="also sparktf with SPARKTF_FEEDER_SCHED=normal, in each round")
    ap.add_argument("--side", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.side:
        run_side = {"sparktf": run_sparktf, "memory": run_memory,
                    "cache-read": run_cache_read}[args.side]
        extra = ({} if args.executors_idle is None else
                 {"executors_idle": args.executors_idle, "executors_policy": args.executors_policy})
        result = run_side(args.rows, args.pin, args.tf_threads, args.epochs, **extra)
        print("RESULT " + json.dumps(result), flush=True)
        return
    got = {"sparktf": [], "memory": []}
    if args.compare_sched:
        got[NO_YIELD] = []
    for r in range(args.rounds):
        for arm in got:
            side, sched = ("sparktf", "normal") if arm == NO_YIELD else (arm, "batch")
            got[arm].append(run(side, args.rows, args.pin, args.tf_threads, args.epochs,
                                args.executors_idle, args.executors_policy, sched))
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]['steps_per_s']:.1f} steps/s"
                                             for k, v in got.items()), flush=True)
        for k, v in got.items():
            print(f"  {k} CPU (cores): {v[-1]['cpu']}", flush=True)
        for k in got:
            if "executor_policies" in got[k][-1]:
                print(f"  {k}: executor threads' policies (share of looks): "
                      f"{got[k][-1]['executor_policies']}", flush=True)
        last = got["sparktf"][-1]
        print(f"  sparktf's feed messages: {last['reads']}; the feed's op in Next "
              f"{last['feed_busy']:.1%} of the span, beyond the prefetch {last['stall']:.1%}",
              flush=True)
    rate = {k: statistics.median(x["steps_per_s"] for x in v) for k, v in got.items()}
    stall = statistics.median(x["stall"] for x in got["sparktf"])
    busy = statistics.median(x["feed_busy"] for x in got["sparktf"])
    ratios = [a["steps_per_s"] / b["steps_per_s"] for a, b in zip(got["sparktf"], got["memory"])]
    reads = [run("cache-read", args.rows, args.pin, 0, 1)["rows_per_s"]
             for _ in range(args.rounds)]
    read = statistics.median(reads)
    # the cores Spark spends reading its cache at sparktf's rate (2 executors of 1 core)
    read_cores = (1 if args.pin else 2) * rate["sparktf"] * BATCH / read
    print(f"\n{args.rows:,} rows of 784 float32 + label"
          + (f", {args.epochs} epochs in one fit" if args.epochs > 1 else "")
          + f", batches of {BATCH}, medians of "
          f"{args.rounds} runs" + (", training on a core of its own (--pin)" if args.pin else
                                   ", all on the same 2 cores") +
          (f", TensorFlow with {args.tf_threads} intra-op thread(s)" if args.tf_threads else "") +
          (f", the executor JVMs' threads matching {args.executors_idle!r} at "
           f"SCHED_{args.executors_policy.upper()} (--executors-idle)"
           if args.executors_idle is not None else "") +
          "\n"
          "| | steps/s (median) | min | max | input stall | feed op in Next |\n"
          "|---|---|---|---|---|---|\n"
          f"| sparktf, fit(ctx.dataset) fed by cluster.train(df) | {rate['sparktf']:.1f} | "
          f"{min(x['steps_per_s'] for x in got['sparktf']):.1f} | "
          f"{max(x['steps_per_s'] for x in got['sparktf']):.1f} | {stall:.1%} | {busy:.1%} |\n"
          f"| from_tensor_slices, in memory | {rate['memory']:.1f} | "
          f"{min(x['steps_per_s'] for x in got['memory']):.1f} | "
          f"{max(x['steps_per_s'] for x in got['memory']):.1f} | | |\n"
          + (f"| {NO_YIELD} | {rate[NO_YIELD]:.1f} | "
             f"{min(x['steps_per_s'] for x in got[NO_YIELD]):.1f} | "
             f"{max(x['steps_per_s'] for x in got[NO_YIELD]):.1f} | | |\n"
             if NO_YIELD in got else "") +
          f"\nsparktf / in memory: **{rate['sparktf'] / rate['memory']:.2f}** (target 0.8); "
          "per run: " + ", ".join(f"{x:.2f}" for x in ratios) + "\n"
          + (f"{NO_YIELD} / in memory: {rate[NO_YIELD] / rate['memory']:.2f}; per run: "
             + ", ".join(f"{a['steps_per_s'] / b['steps_per_s']:.2f}"
                         for a, b in zip(got[NO_YIELD], got["memory"]))
             + f"; sparktf / {NO_YIELD}: {rate['sparktf'] / rate[NO_YIELD]:.2f}\n"
             if NO_YIELD in got else "") +
          f"Spark's scan of the cache alone (toRdd().count()): {read:,.0f} rows/s "
          f"(median of {args.rounds} runs, each the median of 3 reads); at sparktf's "
          f"{rate['sparktf'] * BATCH:,.0f} rows/s that scan would take {read_cores:.2f} "
          f"of the {1 if args.pin else 2} feeding core(s) (sparktf reads the cache's "
          "column buffers instead)")
    print("\nCPU in the timed span, in cores (of 2), median of the runs:\n"
          "| | " + " | ".join(got) + " |\n|---|" + "---|" * len(got))
    kinds = sorted({k for v in got.values() for x in v for k in x["cpu"]},
                   key=lambda k: -max(statistics.median(x["cpu"].get(k, 0) for x in v)
                                      for v in got.values()))
    for k in kinds + ["all"]:
        cells = [statistics.median(sum(x["cpu"].values()) if k == "all" else
                                   x["cpu"].get(k, 0) for x in v) for v in got.values()]
        print(f"| {k} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    print("the node's TF process ran at nice "
          + ", ".join(str(x["trainer_nice"]) for x in got["sparktf"]))


if __name__ == "__main__":
    main()
