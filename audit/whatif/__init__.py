"""The what-if stage: the bridge to the simulator and the answer to "how much of this cluster could we get
back, and at what risk?".

:mod:`.to_simulator` converts the canonical job table and the cluster shape into simulator records (the only
place where pandas meets ``simulator/``); :mod:`.replay` replays a table under one policy (``reclaim simulate``);
:func:`whatif` replays the month under right-sized requests at every risk level, searches the smallest cluster
that keeps today's service, and writes ``whatif/`` (``reclaim whatif``; docs/whatif.md).
"""

from .replay import replay
from .sweep import Options
from .text import whatif_text
from .to_simulator import Converted, to_cluster, to_jobs
from .whatif import WhatIfResult, prediction_frame, whatif

__all__ = ["Converted", "Options", "WhatIfResult", "replay", "to_cluster", "to_jobs", "prediction_frame", "whatif", "whatif_text"]
