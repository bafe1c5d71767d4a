"""TFoS's reservation server and client. sparktf's native coordinator (cluster/) does
this job; TFCluster.run starts it."""

from sparktf.compat._moved import unavailable

TFOS_SERVER_PORT = "TFOS_SERVER_PORT"
TFOS_SERVER_HOST = "TFOS_SERVER_HOST"
BUFSIZE = 1024
MAX_RETRIES = 3
_INSTEAD = ("the native coordinator registers nodes and hands out roles; TFCluster.run "
            "starts it (it listens on spark.driver.host, or SPARKTF_COORDINATOR_HOST)")
Reservations = unavailable("reservation.Reservations", _INSTEAD)
MessageSocket = unavailable("reservation.MessageSocket", _INSTEAD)
Server = unavailable("reservation.Server", _INSTEAD)
Client = unavailable("reservation.Client", _INSTEAD)
