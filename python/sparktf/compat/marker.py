"""TFoS's feed markers (what its queues carried between partitions). sparktf's rings carry
their own (docs/formats/feed.md); these classes exist for code that names them."""


class Marker:
    """Base class of the markers."""


class EndPartition(Marker):
    """The end of a partition in TFoS's feed queue."""
