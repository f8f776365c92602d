"""Models and their calibration: the site rules as estimators (request, per-user mean, last two, VPA, KRR, and the
same rules on each job's habit), the quantile models (LightGBM, its hurdle form, linear), conformal calibration
stratum by stratum, their accuracy metrics, the rolling origin that fits, calibrates and predicts every job from its
past only, down to the audit's right-sized requests, and the kill budget's allocation over resources and strata."""

from .base import Estimator, check_levels
from .baselines import HabitRule, KRRBaseline, LastTwoBaseline, RequestBaseline, UserMeanBaseline, VPABaseline
from .budget import Allocation, allocate, apply_allocation
from .conformal import (
    CURVE_LEVELS,
    ConformalCalibrator,
    LevelCalibrator,
    adaptive_levels,
    conformal_shift,
    level_scores,
    read_curve,
)
from .lineup import CALIBRATED, HABIT_RULES, default_models
from .metrics import METRICS, coverage_se, metric_set, metric_table, pinball, precision_recall
from .quantile_gbm import QuantileGBM
from .quantile_hurdle import HurdleQuantileGBM
from .quantile_linear import LinearQuantile
from .rightsize import last_two, level_label, right_size, rule_predictions
from .rolling import RollingForecaster, RollingResult
from .trees import Forest

__all__ = ["CALIBRATED", "Allocation", "allocate", "apply_allocation", "CURVE_LEVELS", "HABIT_RULES", "METRICS", "ConformalCalibrator", "Estimator", "Forest",
           "HabitRule", "HurdleQuantileGBM",
           "KRRBaseline", "LastTwoBaseline", "LevelCalibrator", "LinearQuantile", "QuantileGBM", "RequestBaseline",
           "RollingForecaster", "RollingResult", "UserMeanBaseline", "VPABaseline", "adaptive_levels", "check_levels",
           "conformal_shift", "coverage_se", "default_models", "last_two", "level_label", "level_scores", "metric_set", "metric_table",
           "pinball", "precision_recall", "read_curve", "right_size", "rule_predictions"]
