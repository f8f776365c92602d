"""Features and history: what is known of a job when it is submitted (its request, who and where, the history of
its user, family and request shape over the jobs that ended before it), what it turned out to need (targets), and
the time-ordered splits that keep every prediction out of sample."""

from .habits import (
    HISTORY_COLUMNS,
    PARENT,
    SIZE_CLASSES,
    STRATA,
    habit_codes,
    habit_groups,
    habit_history,
    history_class,
    members,
    parent,
    sizes,
    strata,
)
from .history import past_stats
from .leakage import future_changes
from .script import script_features
from .source import load_jobs
from .splits import DAY_S, calibration_mask, fold_of, origins, train_mask
from .submission import CATEGORICAL, HIT_FRACTION, codes, epoch_s, in_flight, submission_features
from .tables import SHAPE_KEY, TableIndex, feature_tables, job_features, shape_frame
from .targets import TARGETS, actual, card_memory, eligible, get_target, need_so_far, request, weight

__all__ = ["CATEGORICAL", "DAY_S", "HISTORY_COLUMNS", "HIT_FRACTION", "PARENT", "SHAPE_KEY", "SIZE_CLASSES", "STRATA",
           "TARGETS", "TableIndex", "actual", "calibration_mask", "card_memory", "codes", "eligible", "epoch_s",
           "feature_tables", "fold_of", "future_changes", "get_target", "habit_codes", "habit_groups", "habit_history",
           "history_class", "in_flight", "job_features", "load_jobs", "members", "need_so_far", "origins", "parent", "past_stats",
           "request", "script_features", "shape_frame", "sizes", "strata", "submission_features", "train_mask",
           "weight"]
