"""The what-if stage: the bridge to the simulator.

:mod:`.to_simulator` converts the canonical job table and the cluster shape into simulator records (the only
place where pandas meets ``simulator/``); :mod:`.replay` replays a table under one policy (``reclaim simulate``).
"""

from .replay import replay
from .to_simulator import Converted, to_cluster, to_jobs

__all__ = ["Converted", "replay", "to_cluster", "to_jobs"]
