"""Reclaim simulator: replay jobs on a cluster model under a scheduling policy.

Plain records in (:class:`Job`/:class:`Jobs`, :class:`Cluster`/:class:`Pool`), plain records out
(:class:`SimResult`); no pandas.  See docs/simulator.md.
"""

from .engine import GiveUp, Simulator
from .metrics import metrics, wait_gap
from .occupancy import occupancy
from .policies import EASY, FIFO, Budget, Conservative, FairTree, Multifactor, SubmitOrder
from .records import Cluster, Job, Jobs, NodeGroup, Partition, Pool
from .replay import replay_as_logged
from .result import REASONS, JobRecord, SimResult
from .retry import Retry
from .simulate import POLICY_NAMES, make_policy, simulate

__all__ = [
    "EASY", "FIFO", "POLICY_NAMES", "GiveUp", "REASONS", "Budget", "Cluster", "Conservative", "FairTree", "Job", "JobRecord", "Jobs",
    "Multifactor", "NodeGroup", "Partition", "Pool", "Retry", "SimResult", "Simulator", "SubmitOrder",
    "make_policy", "metrics", "occupancy", "replay_as_logged", "simulate", "wait_gap",
]
