"""The node side: the context ``map_fun(args, ctx)`` receives, and the entry
point of the TF process that the node agent starts (``python -m sparktf.node``).

The agent passes everything through the environment: ``TF_CONFIG``,
``SPARKTF_CLUSTER_INFO`` (role, cluster spec), ``SPARKTF_PORT_FD`` (the
reserved port, held open until :meth:`NodeContext.release_port`),
``SPARKTF_ERROR_FILE`` (where a traceback goes), ``SPARKTF_COORDINATOR`` and
``SPARKTF_TOKEN`` (for barriers and feed accounting), and in InputMode.SPARK
``SPARKTF_FEED_CLUSTER_ID`` (names of the feed rings this process creates).
"""

from __future__ import annotations

import json
import math
import os
import select
import shutil
import sys
import tempfile
import threading
import time
import traceback

from sparktf import errors

DEFAULT_FEED_TIMEOUT = 600.0
# Batches ctx.dataset reads ahead, on a thread of tf.data, while the model trains.
DATASET_PREFETCH = 2
FEED_RING_CAPACITY = 64 << 20
_OUTPUT_QUEUES = ("output", "error")  # TFoS queue names that carry no input

# Input queue name -> _native.FeedReader, created at start (InputMode.SPARK).
_feeds: dict = {}


def _open_feeds(ctx, queues) -> None:
    """Creates this worker's input rings before map_fun runs, so feeding
    tasks can fill them while TensorFlow starts."""
    cluster_id = os.environ.get("SPARKTF_FEED_CLUSTER_ID")
    if not cluster_id or not ctx._fed:
        return
    from sparktf import _native

    for q in queues:
        if q in _OUTPUT_QUEUES or q in _feeds:
            continue
        name = _native.feed_ring_name(cluster_id, ctx.executor_id, q)
        _feeds[q] = _native.FeedReader(name, FEED_RING_CAPACITY, ctx._coordinator, ctx._token,
                                       ctx.executor_id, q, ctx.restart_count)


def _close_feeds(failure: str | None) -> None:
    """Closes the rings: on failure feeding tasks fail with the exception
    line of the traceback `failure` (the coordinator has it whole);
    otherwise they skip what is left (the consumer is done)."""
    for reader in _feeds.values():
        if failure:
            lines = [ln for ln in failure.strip().splitlines() if ln.strip()]
            reader.fail(("map_fun failed: " + (lines[-1] if lines else "?"))[:480])
        reader.close()
    _feeds.clear()


def _rows_of(columns: dict, arrays_as_numpy=False) -> list:
    """Decoded columns back to a list of rows (one value, or a tuple): numbers as Python
    numbers, per-row values as lists, and as numpy arrays (views of the batch) those of
    the columns named in `arrays_as_numpy` (every column when True: what TFoS's inference
    returned for a model's array outputs)."""
    def as_numpy(name, c) -> bool:
        return getattr(c, "ndim", 1) > 1 and (arrays_as_numpy is True or
                                              (arrays_as_numpy and name in arrays_as_numpy))

    cols = [list(c) if as_numpy(name, c) else c.tolist() if hasattr(c, "tolist") else c
            for name, c in columns.items()]
    if len(cols) == 1:
        return cols[0]
    return list(zip(*cols))


class DataFeed:
    """TFoS's DataFeed over a native feed ring (InputMode.SPARK).

    next_batch(n)    up to n rows: a list of rows, each value as the RDD held it (a
                     number, str, bytes, a list, a numpy array), or with
                     input_mapping a dict {tensor name: numpy array}; fewer only
                     at the end of the feed or of an inference partition; empty
                     at the end
    should_stop()    True once the feed has ended (or after terminate())
    batch_results(r) inference: one result per row handed out, in order
    terminate()      stop reading: feeding tasks skip the rest of their data
    """

    def __init__(self, reader, train_mode: bool = True, input_mapping: dict | None = None,
                 timeout: float = DEFAULT_FEED_TIMEOUT):
        self._reader = reader
        self.train_mode = train_mode
        self.input_mapping = dict(input_mapping) if input_mapping else None
        self._timeout = float(timeout)
        self._done = False

    def next_batch(self, batch_size: int):
        got = None if self._done else self._reader.next_columns(int(batch_size), False,
                                                                 self._timeout, True)
        if got is None:
            self._done = True
            return {} if self.input_mapping else []
        _, columns, row_arrays = got
        if self.input_mapping:
            missing = [c for c in self.input_mapping if c not in columns]
            if missing:
                raise errors.InvalidArgument(f"input_mapping names columns {missing} that the "
                                             f"feed does not have (it has {list(columns)})")
            return {tensor: columns[col] for col, tensor in self.input_mapping.items()}
        # As the RDD held them: a numpy array stays one, a list stays a list.
        return _rows_of(columns, set(row_arrays))

    def should_stop(self) -> bool:
        return self._done

    def batch_results(self, results) -> None:
        from sparktf import _native

        if len(results) == 0:
            return
        self._reader.push_results(_native.rows_to_batch(results, None), self._timeout)

    def terminate(self) -> None:
        self._reader.terminate()
        self._done = True

    def progress(self) -> dict:
        """Rows delivered, consumed, dropped (to keep workers in step), and duplicates
        (rows a retried feeding task sent again, dropped); batches handed out and
        wait_us, the microseconds next() took before it had a batch (input stall; for
        ctx.dataset, on tf.data's prefetch thread, overlapping training); messages read
        in place from the ring (in_place) or copied out of it (copied), and evictions,
        the times messages kept too long moved out of the ring."""
        return self._reader.progress()


class NodeContext:
    """What a node knows about itself, with TFoS's attribute names.

    executor_id   this node's index among the cluster's nodes (0..N-1)
    worker_num    its position in role order (TFoS's worker_num)
    job_name      'ps', 'chief'/'master', 'evaluator' or 'worker'
    task_index    index within its job
    cluster_spec  {job: [host:port, ...]} for every job
    num_workers   workers plus the chief/master
    is_chief      writes exports and summaries (decided by the coordinator)
    restart_count 0, or how many times the cluster was restarted (TFCluster.run restarts=K)
    feed_index    position among the training workers, chief first (-1 for ps and
                  evaluator): which share of the files or partitions this node gets
    defaultFS     the cluster's default file system URI ('file://' locally)
    working_dir   the node's working directory
    """

    # steps_per_epoch for Keras fit on ctx.dataset under a distribution strategy
    # (which insists on a step count): the feed ends first, on every worker at
    # the same step, and Keras stops there.
    UNTIL_END_OF_FEED = 1 << 40

    def __init__(self, info: dict, defaultFS: str = "file://", working_dir: str | None = None):
        self.executor_id = int(info["executor_id"])
        self.worker_num = int(info["worker_num"])
        self.job_name = info["job_name"]
        self.task_index = int(info["task_index"])
        self.cluster_spec = info["cluster_spec"]
        self.num_workers = int(info["num_workers"])
        # The coordinator's rules (cluster/tensorflow_roles.h), read, never re-derived.
        self.is_chief = bool(info.get("is_chief", False))
        self.feed_index = int(info.get("feed_index", -1))
        self._fed = bool(info.get("fed", False))
        # 0 in the first run of the cluster, k after its k-th restart (TFCluster.run's
        # restarts): resume from the checkpoints of the runs before.
        self.restart_count = int(info.get("generation", 0))
        self.defaultFS = defaultFS
        self.working_dir = working_dir or os.getcwd()
        self._port_fd = int(os.environ.get("SPARKTF_PORT_FD", "-1"))
        self._port_lock = threading.Lock()
        # run(release_port=True): sparktf releases the port once TensorFlow listens, so to
        # map_fun (as in TFoS) it is released already.
        self._releases_port_itself = False
        self._coordinator = os.environ.get("SPARKTF_COORDINATOR", "")
        self._token = os.environ.get("SPARKTF_TOKEN", "")
        self._num_nodes = int(info.get("num_nodes", 0))

    @classmethod
    def from_env(cls, defaultFS: str = "file://") -> "NodeContext":
        info = os.environ.get("SPARKTF_CLUSTER_INFO")
        if not info:
            raise RuntimeError("not running under a sparktf node agent (no SPARKTF_CLUSTER_INFO)")
        return cls(json.loads(info), defaultFS=defaultFS)

    def absolute_path(self, path: str) -> str:
        """A fully qualified URI for `path` (TFNode.hdfs_path)."""
        from sparktf import TFNode

        return TFNode.hdfs_path(self, path)

    @property
    def mgr(self) -> "FeedManager":
        """TFoS's ``ctx.mgr``: pass it to ``TFNode.DataFeed(ctx.mgr, ...)``."""
        return FeedManager(self)

    @property
    def tmp_socket(self):
        """TFoS's ``ctx.tmp_socket``: the reservation of this node's port while it is held
        (``getsockname()``, ``close()`` releases it), else None."""
        held = self._port_fd >= 0 and not self._releases_port_itself
        return ReservedPort(self) if held else None

    def start_cluster_server(self, num_gpus: int = 1, rdma: bool = False):
        """TFoS's TF1 helper; raises Unimplemented, naming the TF 2 way."""
        from sparktf import TFNode

        return TFNode.start_cluster_server(self, num_gpus, rdma)

    def export_saved_model(self, sess, export_dir, tag_set, signatures):
        """TFoS's TF1 helper; raises Unimplemented, naming the TF 2 way."""
        from sparktf import TFNode

        return TFNode.export_saved_model(sess, export_dir, tag_set, signatures)

    def release_port(self) -> None:
        """Releases the port reserved for this node. With run(..., release_port=True), the
        default, sparktf does it once a server listens on the port (TensorFlow's gRPC
        server binds with SO_REUSEPORT, as the reservation does, so it can bind while the
        port is held); call it yourself before starting a server that binds without
        SO_REUSEPORT, and with release_port=False before starting TensorFlow's."""
        with self._port_lock:
            if self._port_fd >= 0:
                os.close(self._port_fd)
                self._port_fd = -1

    def _release_port_once_listening(self, poll: float = 0.05) -> None:
        """Holds the reservation until something listens on this node's port, then
        releases it, from a daemon thread: while TensorFlow starts, the held port cannot
        be handed to an outgoing connection as its ephemeral port (which once made
        TensorFlow's server fail to start)."""
        port = int(os.environ.get("SPARKTF_PORT", "0"))
        if self._port_fd < 0 or not port:
            return

        def watch():
            while self._port_fd >= 0:
                if _listening_on(port):
                    self.release_port()
                    return
                time.sleep(poll)

        threading.Thread(target=watch, name="sparktf-port", daemon=True).start()

    def barrier(self, name: str, timeout: float = 600.0) -> None:
        """Waits until every node of the cluster reached the barrier `name`."""
        from sparktf import _native

        _native.barrier(self._coordinator, self._token, name, self.executor_id, 0, timeout,
                        self.restart_count)

    def report(self, step: int, epoch: int | None = None, force: bool = False,
               batch_size: int | None = None, **metrics) -> bool:
        """Reports this node's training progress (a custom loop's hook; Keras:
        metrics_callback): the step, and numbers such as loss=..., shown by
        cluster.status() and on the driver; with `batch_size` (examples a step), its
        examples/s too. Cheap to call every step: at most one report per 0.5 s goes to
        the node agent (force=True sends this one, e.g. the last); values are read (a
        tensor's .numpy()) only for the reports sent. True if sent."""
        return _metrics.report(step, epoch, metrics, force, batch_size)

    def metrics_callback(self, batch_size: int | None = None):
        """A Keras callback that reports step, epoch, loss and the metrics Keras logs
        (ctx.report), from whichever Keras the node runs (tf.keras):
        ``model.fit(..., callbacks=[ctx.metrics_callback()])``; with `batch_size` (this
        worker's examples a step), its examples/s too."""
        import tensorflow as tf

        reporter = _metrics

        class SparktfMetrics(tf.keras.callbacks.Callback):
            def __init__(self):
                super().__init__()
                self._supports_tf_logs = True  # no per-step sync to numpy for us
                self.step, self.epoch = 0, 0

            def on_epoch_begin(self, epoch, logs=None):
                self.epoch = epoch

            def on_train_batch_end(self, batch, logs=None):
                self.step += 1
                reporter.report(self.step, self.epoch, logs, False, batch_size)

            def on_epoch_end(self, epoch, logs=None):
                reporter.report(self.step, epoch, logs, True, batch_size)

        return SparktfMetrics()

    def export_model(self, model, export_dir: str) -> str | None:
        """Exports a SavedModel. Every worker must call it (saving may run
        collective ops); only the chief writes to `export_dir`, the others to a
        temporary directory that is then removed. Returns the path written by
        this node's export, or None on non-chief nodes."""
        export_saved_model(model, export_dir, self.is_chief)
        return export_dir if self.is_chief else None

    def _feed(self, qname: str):
        if qname not in _feeds:
            if not os.environ.get("SPARKTF_FEED_CLUSTER_ID"):
                raise errors.InvalidArgument(
                    "this node has no feed: the cluster was not started with "
                    "input_mode=InputMode.SPARK")
            raise errors.NotFound(f"no input queue {qname!r} on {self.job_name}:{self.task_index} "
                                  f"(queues: {sorted(_feeds)}; ps and evaluator nodes have none)")
        return _feeds[qname]

    def get_data_feed(self, train_mode: bool = True, qname_in: str = "input",
                      qname_out: str = "output", input_mapping: dict | None = None,
                      timeout: float = DEFAULT_FEED_TIMEOUT) -> DataFeed:
        """The DataFeed of queue `qname_in` (TFoS's ctx.get_data_feed).
        Results of batch_results go back to the feeding task of the current
        partition (`qname_out` is accepted for TFoS compatibility)."""
        del qname_out
        return DataFeed(self._feed(qname_in), train_mode, input_mapping, timeout)

    def dataset(self, batch_size: int, qname: str = "input", input_mapping: dict | None = None,
                output_signature=None, timeout: float = DEFAULT_FEED_TIMEOUT):
        """A tf.data.Dataset of batches of exactly `batch_size` rows read from
        the feed, as column tensors: a tuple of columns (one tensor if there is
        one column), or with input_mapping a dict {tensor name: tensor}.

        Every worker ends at the same step (lockstep end of data); the rows
        left over are dropped and reported on the driver. With
        MultiWorkerMirroredStrategy pass the dataset to
        ``strategy.distribute_datasets_from_function(lambda _: ctx.dataset(n))``
        (n = per-worker batch) so that TensorFlow does not re-batch or shard it.
        The first call waits for the first batch, to learn the columns' types,
        unless output_signature is given."""
        import numpy as np
        import tensorflow as tf

        reader = self._feed(qname)
        batch_size = int(batch_size)
        schema = reader.peek_schema(timeout) if output_signature is None else None
        if output_signature is None and schema is None:
            raise errors.InvalidArgument(
                f"no data was fed to {self.job_name}:{self.task_index} and no output_signature "
                "was given, so the dataset's column types are unknown")
        names = [s[0] for s in schema] if schema else None
        if input_mapping:
            unknown = [c for c in input_mapping if names is not None and c not in names]
            if unknown:
                raise errors.InvalidArgument(f"input_mapping names columns {unknown} that the "
                                             f"feed does not have (it has {names})")

        def shape_out(columns: dict):
            if input_mapping:
                return {tensor: columns[col] for col, tensor in input_mapping.items()}
            values = tuple(columns[n] if n in columns else columns[str(n)] for n in names)
            return values[0] if len(values) == 1 else values

        if output_signature is None:
            def spec(dtype, shape):
                tf_dtype = tf.string if dtype == "bytes" else tf.as_dtype(np.dtype(dtype))
                return tf.TensorSpec((batch_size,) + tuple(shape), tf_dtype)

            by_name = {n: spec(d, shp) for n, d, shp in schema}
            output_signature = shape_out(by_name)

        ops = _feed_ops() if schema and all(d != "bytes" for _, d, _ in schema) else None
        if ops is not None:  # the feed's columns straight into tensors, in C++
            source, next_fn = reader.tf_source()
            dtypes = [tf.as_dtype(np.dtype(d)) for _, d, _ in schema]
            shapes = [(batch_size,) + tuple(shp) for _, _, shp in schema]

            def next_batch(_):
                ok, values = ops.sparktf_feed_next(
                    source=source, next_fn=next_fn, batch_size=batch_size,
                    timeout_ms=int(timeout * 1000), dtypes=dtypes,
                    row_ranks=[len(shp) for _, _, shp in schema],
                    row_dims=[d for _, _, shp in schema for d in shp])
                for value, shape in zip(values, shapes):
                    value.set_shape(shape)  # the end's empty values are dropped next
                return ok, tuple(values)

            ds = (tf.data.Dataset.from_tensors(0).repeat().map(next_batch)
                  .take_while(lambda ok, values: ok)
                  .map(lambda ok, values: shape_out(dict(zip(names, values))))
                  .prefetch(DATASET_PREFETCH))
        else:  # bytes columns, or no op library: a Python generator
            def batches():
                while True:
                    got = reader.next_columns(batch_size, True, timeout)
                    if got is None:
                        return
                    yield shape_out(got[1])

            ds = tf.data.Dataset.from_generator(batches, output_signature=output_signature)
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.OFF)
        return ds.with_options(options)

    def __repr__(self) -> str:
        return (f"NodeContext(executor_id={self.executor_id}, job_name={self.job_name!r}, "
                f"task_index={self.task_index}, num_workers={self.num_workers})")


_FEED_OPS = []


def _feed_ops():
    """The op library of ctx.dataset (libsparktf_tf_ops.so, built with the wheel when
    TensorFlow's C headers were there), loaded once; None without it."""
    if not _FEED_OPS:
        import tensorflow as tf

        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libsparktf_tf_ops.so")
        _FEED_OPS.append(tf.load_op_library(path) if os.path.isfile(path) else None)
    return _FEED_OPS[0]


def export_saved_model(model, export_dir: str, is_chief: bool,
                       keras2_as_tfos: bool = False) -> None:
    """Saves `model` (Keras 3 or 2, or a tf.Module) as a SavedModel with a serving_default
    signature: in `export_dir` on the chief; elsewhere into a temporary directory, then
    removed (every MultiWorkerMirrored worker must save: saving runs collective ops).
    `keras2_as_tfos`: a Keras 2 model goes through tf.saved_model.save, as TFoS saved it
    (signature keys named after its layers) instead of its export() (output_0, ...)."""
    target = export_dir if is_chief else tempfile.mkdtemp(prefix="sparktf-export-")
    keras3 = type(model).__module__.startswith("keras.")
    try:
        if hasattr(model, "export") and (keras3 or not keras2_as_tfos):
            model.export(target)  # Keras 3 and 2: an inference SavedModel
        else:
            import tensorflow as tf

            tf.saved_model.save(model, target)
    finally:
        if not is_chief:
            shutil.rmtree(target, ignore_errors=True)


class FeedManager:
    """What ``ctx.mgr`` is: TFoS passed its per-executor queue manager to
    ``TFNode.DataFeed``; here it names the node whose feed rings DataFeed reads."""

    def __init__(self, ctx: NodeContext):
        self.ctx = ctx

    def get(self, key: str):
        """TFoS's state key: 'running' (this node's feed is read by DataFeed)."""
        if key != "state":
            raise errors.NotFound(f"ctx.mgr has no key {key!r} (only 'state')")
        return "running"

    def get_queue(self, qname: str):
        raise errors.Unimplemented(
            "ctx.mgr has no multiprocessing queues: feeds are shared-memory rings. Read "
            f"queue {qname!r} with TFNode.DataFeed(ctx.mgr, train_mode, qname_in={qname!r}) "
            "or ctx.get_data_feed(...)")


class ReservedPort:
    """What ``ctx.tmp_socket`` is while this node's port is reserved."""

    def __init__(self, ctx: NodeContext):
        self._ctx = ctx

    def getsockname(self) -> tuple:
        return ("0.0.0.0", int(os.environ.get("SPARKTF_PORT", "0")))

    def fileno(self) -> int:
        return self._ctx._port_fd

    def close(self) -> None:
        self._ctx.release_port()


def _write_error(text: str) -> None:
    path = os.environ.get("SPARKTF_ERROR_FILE")
    if path:
        with open(path, "w") as f:
            f.write(text)


class _AfterImport:
    """A meta-path finder that runs `hook(module)` right after the module `name` is
    imported (once), so that a node prepares TensorFlow or Keras without importing them
    when map_fun never does."""

    def __init__(self, name: str, hook):
        self.name, self.hook = name, hook

    def find_spec(self, name, path=None, target=None):
        if name != self.name:
            return None
        import importlib.machinery

        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            self.hook(module)

        spec.loader.exec_module = exec_module
        return spec


def _after_import(name: str, hook) -> None:
    """hook(module) once `name` is imported: now if it is, else right after its import."""
    if name in sys.modules:
        hook(sys.modules[name])
    else:
        sys.meta_path.insert(0, _AfterImport(name, hook))


def _register_tf_filesystems(_tensorflow=None) -> None:
    """Registers sparktf's TensorFlow filesystem plugin (``sparktf.tf``: hdfs://, s3://)."""
    try:
        import sparktf.tf  # noqa: F401 - registers on import
    except errors.NotFound as e:  # built without TensorFlow's headers
        sys.stderr.write(f"sparktf: no hdfs:// or s3:// for TensorFlow: {e}\n")


def _prepare_imports() -> None:
    """What the node does to TensorFlow and Keras when map_fun imports them."""
    from sparktf import keras_version

    _after_import("tensorflow", _register_tf_filesystems)
    if os.environ.get(keras_version.CHECK_ENV) == "1":
        _after_import(keras_version.KERAS3_TRAINER, keras_version.refuse_multi_worker)


# The pipe to this node's agent (SPARKTF_STATUS_FD): "progress" and "done" lines.
_status_lock = threading.Lock()


def _tell_agent(line: bytes) -> None:
    fd = int(os.environ.get("SPARKTF_STATUS_FD", "-1"))
    if fd < 0:
        return
    with _status_lock:
        try:
            os.write(fd, line)
        except OSError:
            pass


def _report_progress(interval: float = 1.0) -> None:
    """From a daemon thread, tells the agent "progress" each second in which the main
    thread moved (its innermost frame or instruction changed between two looks). A main
    thread that stays put (a sleep in a Keras callback, a deadlock) stops the reports,
    and the agent fails the node after TFCluster.run's progress_timeout."""
    main = threading.main_thread().ident

    def where():
        frame = sys._current_frames().get(main)
        return (id(frame), frame.f_lasti) if frame is not None else None

    def watch():
        last = where()
        while True:
            time.sleep(interval)
            now = where()
            if now != last:
                _tell_agent(b"progress\n")
            last = now

    threading.Thread(target=watch, name="sparktf-progress", daemon=True).start()


class _MetricsReporter:
    """Turns ctx.report calls into "metrics {json}" lines on the agent's status pipe: at
    most one per `interval` s unless forced, within a pipe's atomic write size."""

    def __init__(self, interval: float = 0.5):
        self.interval = interval
        self._last = float("-inf")

    def report(self, step, epoch, metrics, force: bool, batch_size=None) -> bool:
        """`batch_size` goes with the metrics when given (the coordinator keeps it apart)."""
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return False
        self._last = now
        values = {}
        for name, value in (metrics or {}).items():
            try:
                number = float(value.numpy() if hasattr(value, "numpy") else value)
            except (TypeError, ValueError):
                continue  # not a scalar: not a metric to show
            if math.isfinite(number):
                values[str(name)[:64]] = number
        if batch_size is not None:
            values["batch_size"] = int(batch_size)
        line = {"step": int(step), "metrics": values}
        if epoch is not None:
            line["epoch"] = int(epoch)
        data = b"metrics " + json.dumps(line).encode() + b"\n"
        if len(data) > select.PIPE_BUF:  # whole or not at all: never interleaved
            data = b"metrics " + json.dumps({k: v for k, v in line.items()
                                             if k != "metrics"}).encode() + b"\n"
        _tell_agent(data)
        return True


_metrics = _MetricsReporter()


def _tell_agent_done() -> None:
    """Tells the agent that map_fun returned and its results are out (the streams are
    flushed): the agent gives the interpreter's teardown a moment, then ends it, so that
    TensorFlow's runtime waiting for its peers at exit does not hold up the cluster."""
    sys.stdout.flush()
    sys.stderr.flush()
    _tell_agent(b"done\n")


def _listening_on(port: int) -> bool:
    """Whether a TCP socket of this machine listens on `port` (IPv4 or IPv6), asked of the
    kernel in the core: cheap enough to poll while the model trains."""
    from sparktf import _native

    return _native.tcp_port_listening(port)


def _missing_module_hint(e: BaseException) -> str:
    """For a module this node's Python lacks, where to add it; '' otherwise."""
    if not isinstance(e, ModuleNotFoundError) or not e.name:
        return ""
    import socket

    package = e.name.split(".")[0]
    return (f"sparktf: the Python of this node ({sys.executable} on {socket.gethostname()}) "
            f"has no module '{package}'. Executors run their own Python environment, not "
            f"the driver's: install '{package}' into the environment you ship to them "
            "(sparktf pack, then spark-submit --archives env.tar.gz#env with "
            "spark.pyspark.python=./env/bin/python) or into every machine's Python.\n")


def main(argv: list[str]) -> int:
    """Entry point of the TF process: loads (map_fun, args, options) from the
    payload file the node task wrote, deletes it, and runs map_fun."""
    if len(argv) != 1:
        print("usage: python -m sparktf.node PAYLOAD", file=sys.stderr)
        return 2
    try:
        import pickle  # imports whichever cloudpickle module wrote the payload

        try:
            with open(argv[0], "rb") as f:
                payload = f.read()
        finally:
            os.unlink(argv[0])  # even if unreadable: nothing of the node stays on disk
        _prepare_imports()  # unpickling map_fun may import TensorFlow already
        map_fun, tf_args, options = pickle.loads(payload)
        _report_progress()
        ctx = NodeContext.from_env(defaultFS=options.get("defaultFS", "file://"))
        _open_feeds(ctx, options.get("queues") or ["input"])
        if options.get("release_port", True):
            ctx._releases_port_itself = True
            ctx._release_port_once_listening()
        map_fun(tf_args, ctx)
        ctx.release_port()
        _close_feeds(None)
        _tell_agent_done()
        return 0
    except BaseException as e:  # noqa: BLE001 - everything is reported, then we exit
        if isinstance(e, SystemExit) and e.code in (0, None):
            _close_feeds(None)
            _tell_agent_done()
            return 0
        text = traceback.format_exc() + _missing_module_hint(e)
        _write_error(text)
        _close_feeds(text)
        sys.stderr.write(text)
        sys.stderr.flush()
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
