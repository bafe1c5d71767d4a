"""TFoS's TFManager (a multiprocessing manager of queues per executor). sparktf feeds
through shared-memory rings instead; ``ctx.mgr`` is what ``TFNode.DataFeed`` takes."""

from sparktf.compat._moved import unavailable

_INSTEAD = ("feeds are shared-memory rings read with TFNode.DataFeed(ctx.mgr, ...) or "
            "ctx.get_data_feed(...); TFCluster.run starts them")
TFManager = unavailable("TFManager.TFManager", _INSTEAD)
start = unavailable("TFManager.start", _INSTEAD)
connect = unavailable("TFManager.connect", _INSTEAD)
# TFoS's module globals (its manager and queues); there are none here.
mgr = None
qdict: dict = {}
kdict: dict = {}
