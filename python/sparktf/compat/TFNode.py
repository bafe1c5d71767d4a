"""TFoS's TFNode module (sparktf.TFNode)."""

from sparktf.TFNode import (DataFeed, batch_results, export_saved_model, hdfs_path,  # noqa: F401
                            next_batch, release_port, start_cluster_server, terminate)
