"""map_funs for the InputMode.SPARK tests (imported by the TF processes)."""

import json
import os


def count_rows(args, ctx):
    """Reads the whole feed with DataFeed.next_batch; writes what it saw."""
    feed = ctx.get_data_feed(train_mode=True)
    rows, batches, total = 0, 0, 0.0
    while not feed.should_stop():
        batch = feed.next_batch(args.get("batch", 100))
        if len(batch) == 0:
            continue
        rows += len(batch)
        batches += 1
        total += sum(float(r[0]) for r in batch)
    with open(os.path.join(args["out"], f"node-{ctx.executor_id}.json"), "w") as f:
        json.dump({"rows": rows, "batches": batches, "sum": total,
                   "progress": feed.progress()}, f)


def squares(args, ctx):
    """Inference: answers each row x with x*x, in order."""
    feed = ctx.get_data_feed(train_mode=False)
    while not feed.should_stop():
        batch = feed.next_batch(args.get("batch", 37))
        if len(batch) > 0:
            feed.batch_results([int(x) * int(x) for x in batch])


def fail_after(args, ctx):
    """Reads a few batches, then raises."""
    feed = ctx.get_data_feed()
    for _ in range(args.get("batches", 2)):
        feed.next_batch(10)
    raise ValueError("consumer exploded on purpose")


def terminate_after(args, ctx):
    """Reads a few batches, then terminates the feed; records what it read."""
    feed = ctx.get_data_feed()
    rows = 0
    for _ in range(args.get("batches", 3)):
        rows += len(feed.next_batch(10))
    feed.terminate()
    with open(os.path.join(args["out"], f"node-{ctx.executor_id}.json"), "w") as f:
        json.dump({"rows": rows}, f)
