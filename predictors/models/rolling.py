"""Rolling-origin forecasting: every tested job is predicted only from what had ended before it.

At each fold origin (weekly) the models are refitted (every ``retrain_every`` folds) on the jobs that
ended before the origin, predict the jobs submitted in the following week, and the calibrated models
are conformalised on the out-of-sample predictions of the trailing ``cal_days`` (jobs that ended before
the origin), at levels adapted (``coverage_gain``, see ``conformal.adaptive_levels``) to the coverage already observed.
A last week shorter than ``min_last_share`` of a test window (a month's last two or three days) is joined to
the week before: predicted by that fold's models and calibration, not by a refit on the most data for the
fewest jobs.  Folds with fewer than ``min_cal`` calibration jobs are burn-in: predicted, not scored
(unless ``split_calibration``: then a model refitted on the first 70 % of the history calibrates them).

Calibration is group-conditional (Mondrian conformal prediction, Vovk et al. 2005; ``strata``): every job
belongs to a stratum of its habit's history (``predictors.features.habits.strata``: a cold start, or a short or
long history that is tight, spread or wide; within it, the job's size class, ``size_classes`` quantiles of what
it asks times its time limit), and each stratum is calibrated on its own calibration jobs, so
that coverage holds stratum by stratum, not only on average.  A stratum with fewer than ``min_stratum``
calibration jobs borrows its parent's (its history class, then every job).  With ``select``, the candidates
named there (the calibrated model and the site rules, each calibrated the same way) are weighed per fold and
stratum by the capacity their calibrated, capped bounds held as issued to that stratum's jobs of earlier folds
(out of sample, summed over the levels), and the one holding least gives the job's ``best@LEVEL`` at every level
(one candidate, so the bounds stay nested): at the same calibrated coverage, the tighter bound.  A candidate whose
bounds covered those jobs demonstrably less than a level is passed over: the tightest of several calibrated
candidates is often the one whose calibration runs low.

What calibrates is what is known at the origin: the need of a job that ended, and for a run time, the run so far
of a job still going (``features.need_so_far``), read as a right-censored score (``censored``: Kaplan–Meier), so
that the long runs not yet ended count in their stratum.  With refits every few folds (``same_models``), a
stratum's bounds come from the models that predicted its calibration jobs (``pools``): after a refit the models
before go on predicting in shadow, and issue a stratum's bounds until the new ones have scores enough there,
as long as the models before learned from less than ``cal_days`` of history.

The candidates that read the habit's own past alone (``reads_habits``: the site rules and ``habit_t``, which learn
next to nothing from other habits) are *free*: they predict every job from the first origin, those of the warm-up
too (by their first fit, from each job's own past), and are calibrated on the jobs they predicted that ended or
run in the window; once a group has enough jobs predicted in earlier folds for its highest level (99 for 0.99)
those alone, since a warm-up job's habit history is the shortest and its long runs have not ended.  With
``model_warmup_days`` the origins before that many days are *early*: the free candidates alone are fitted, weighed
and issue the bounds, and the models are fitted from the first origin after it (its refits counted from there).
None of them can predict a cold start (its habit has no past), so an early fold issues it no bound: it keeps its
request, as a job before the first origin does, and its request neither counts in its stratum's coverage nor
lowers the stratum's adapted level afterwards.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..features import (
    DAY_S,
    SIZE_CLASSES,
    actual,
    calibration_mask,
    eligible,
    epoch_s,
    fold_of,
    get_target,
    habit_groups,
    habit_history,
    history_class,
    members,
    need_so_far,
    origins,
    parent,
    request,
    sizes,
    strata,
    submission_features,
    train_mask,
    weight,
)
from .conformal import CURVE_LEVELS, ConformalCalibrator, LevelCalibrator, adaptive_levels
from .lineup import CALIBRATED
from .metrics import coverage_se
from .pools import Pool


@dataclass
class RollingResult:
    """``jobs``: one row per eligible job in submission order with ``row`` (its position in the input), ``y``, ``request``, ``w``, ``habit`` (its habit's code; a job without a user has a negative one of its own), ``fold``,
    ``scored``, ``cold_user``, ``cold_family``, ``stratum`` and a column ``MODEL@LEVEL`` per prediction (with
    ``select``: ``best@LEVEL`` and the candidate it came from, ``best_source@LEVEL``).  A calibrated
    model's ``MODEL@LEVEL`` is its calibrated quantile capped at the request (``cap``) or not; both are also
    kept as ``MODEL_capped@LEVEL`` and ``MODEL_nocap@LEVEL``, and the raw output as ``MODEL_raw@LEVEL``.
    ``folds``: one row per fold."""

    target: str
    levels: tuple
    models: tuple
    jobs: pd.DataFrame
    folds: pd.DataFrame


def calibration_input(model, X: pd.DataFrame) -> np.ndarray:
    """What a calibrator reads: the quantile curve at ``CURVE_LEVELS`` for models that give one, else the
    predictions at the model's levels."""
    return model.predict_at(X, CURVE_LEVELS) if hasattr(model, "predict_at") else model.predict(X)


def calibrator(by_level: bool, levels, log_offset: float, cap: bool):
    """Calibration by level for models with a quantile curve, else the multiplicative shift."""
    return LevelCalibrator(levels, cap=cap) if by_level else ConformalCalibrator(levels, log_offset=log_offset, cap=cap)


def _meta(E: pd.DataFrame, X: pd.DataFrame, target: str, gpu_memory_bytes) -> pd.DataFrame:
    keep = [c for c in ("cluster", "job_id", "user", "account", "partition", "qos", "gpu_type", "state")
            if c in E.columns]
    meta = E[keep].reset_index(drop=True).copy()
    meta["family"] = X["family"].to_numpy()
    meta["submit_s"] = epoch_s(E["submit_time"])
    meta["end_s"] = epoch_s(E["end_time"])
    meta["start_s"] = epoch_s(E["start_time"]) if "start_time" in E else np.nan
    meta["y"] = actual(E, target)
    meta["request"] = request(E, target, gpu_memory_bytes=gpu_memory_bytes)
    meta["w"] = weight(E, target)
    meta["habit"] = habit_groups(E)
    return meta


#: seen jobs of a stratum from which its adaptive level takes the whole ``coverage_gain`` (a share of 1,000 jobs
#: at 0.9 strays by chance with sd 0.0095, under half the ±0.02 a stratum's coverage is held to)
ACI_FULL = 1000


class _Columns:
    """The features a model reads: the submission features, and with them the habit history for the models
    that read it (``reads_habits``: the site rules; the quantile models read the submission features alone)."""

    def __init__(self, plain: pd.DataFrame, with_habits: pd.DataFrame):
        self.plain, self.with_habits = plain, with_habits

    def rows(self, est, rows: np.ndarray) -> pd.DataFrame:
        frame = self.with_habits if getattr(est, "reads_habits", False) else self.plain
        return frame[rows] if rows.dtype == bool else frame.iloc[rows]


class RollingForecaster:
    """Runs the rolling origin for one target over a set of named estimators (cloned at each refit)."""

    def __init__(self, models: dict, levels=(0.5, 0.9, 0.99), *, calibrated=CALIBRATED, test_days: float = 7.0,
                 warmup_days: float = 28.0, retrain_every: int = 1, train_days: float | None = None,
                 cal_days: float = 28.0, coverage_gain: float = 6.0, min_cal: int = 200, min_train: int = 100, cap: bool = True,
                 window: int = 20, gpu_memory_bytes: dict | None = None, start_s: float | None = None,
                 split_calibration: bool = False, split_fraction: float = 0.3, min_last_share: float = 0.0,
                 strata: bool = True, min_stratum: int = 50, size_classes: int = SIZE_CLASSES, select=None,
                 uncapped: bool = True, same_models: bool = True, model_warmup_days: float | None = None):
        self.models = models
        self.levels = levels
        self.calibrated = calibrated
        self.test_days = test_days
        self.warmup_days = warmup_days
        self.retrain_every = retrain_every
        self.train_days = train_days
        self.cal_days = cal_days
        self.coverage_gain = coverage_gain
        self.min_cal = min_cal
        self.min_train = min_train
        self.cap = cap
        self.window = window
        self.gpu_memory_bytes = gpu_memory_bytes
        self.start_s = start_s
        self.split_calibration = split_calibration
        self.split_fraction = split_fraction
        self.min_last_share = min_last_share
        self.strata = strata
        self.min_stratum = min_stratum
        self.size_classes = size_classes
        self.select = select
        self.uncapped = uncapped
        self.same_models = same_models
        self.model_warmup_days = model_warmup_days

    def _split(self, X, y, end, submit, origin, names, running) -> tuple[np.ndarray, dict]:
        """Split calibration for a fold without enough out-of-sample history: refit on the jobs that ended
        before the last ``split_fraction`` of the history window, predict the jobs submitted in it (and ended
        before the origin, or still ``running`` with a known lower bound of need).  Residuals of that weaker
        model make the shift conservative."""
        first = np.nanmin(submit)
        cut = origin - self.split_fraction * (origin - first)
        tr = end < cut
        cm = (submit >= cut) & ((end < origin) | running)
        if tr.sum() < self.min_train or cm.sum() < self.min_cal:
            return np.zeros(len(y), dtype=bool), {}
        at = np.flatnonzero(cm)
        return cm, {m: calibration_input(self.models[m].clone().fit(X.rows(self.models[m], tr), y[tr]),
                                         X.rows(self.models[m], at)) for m in names}

    def _stands_in(self, learned: dict, generation: int) -> bool:
        """Whether the models of ``generation`` stand in for the next refit's (predicting in shadow, calibrated on
        their own scores): only while they learned from less than ``cal_days`` of history (``learned``: seconds
        of history per generation).  Past that a refit adds little to what they knew, and the larger pool of
        every model's scores is the better calibration."""
        return generation >= 0 and learned[generation] < self.cal_days * DAY_S

    def _pools(self, cm_all: np.ndarray, split_inputs: dict | None, generation: np.ndarray,
               previous_generation: np.ndarray, test: np.ndarray, shadow: bool, levels, learned: dict) -> list:
        """The calibration pools of a fold, in order of preference (``pools.Pool``): with ``shadow``, the scores
        of the models issuing the fold (where a stratum has enough of them for its highest level once a model
        before them can stand in), then those of the models before (their own and their shadow predictions),
        then every calibration job's; only every calibration job's once the models before no longer stand in
        (:meth:`_stands_in`)."""
        if split_inputs is not None:
            return [Pool(cm_all, self.min_stratum, "split", split_inputs=split_inputs)]
        every = Pool(cm_all, self.min_stratum)
        if not shadow or not len(test):
            return [every]
        now, before = generation[test[0]], previous_generation[test[0]]
        if before < 0:
            return [Pool(cm_all & (generation == now), self.min_stratum), every]
        if not self._stands_in(learned, before):
            return [every]
        top = max(self.min_stratum, math.ceil(1.0 / (1.0 - max(levels)) - 1e-9) - 1)  # 99 jobs for 0.99
        own = cm_all & ((generation == before) | (previous_generation == before))
        return [Pool(cm_all & (generation == now), top),
                Pool(own, self.min_stratum, "before", generation=generation, before=before), every]

    def _groups(self, names: np.ndarray, codes: np.ndarray, pools: list, ended: np.ndarray, seen: np.ndarray,
                test: np.ndarray):
        """Per stratum among ``test`` (``names[codes]`` each job's stratum): ``(stratum code, pool, calibration
        rows, seen mask)``.  The calibration jobs are the group's in the first of the ``pools`` (``Pool``, in order
        of preference) where it has ``least`` ended ones; the group is the stratum, or its parent (then every job)
        where no pool has enough; the seen mask: the already observed jobs of that same group (for the adaptive
        levels).  A group's jobs are found among the few stratum names, then spread by code."""
        last = pools[-1]
        counted = [p.rows & ended for p in pools]  # once per fold, not per stratum and pool
        for c in dict.fromkeys(codes[test].tolist()):
            group, chosen = str(names[c]), None
            while group is not None:
                inside = members(group, names)[codes]
                chosen = next((p for p, n in zip(pools, counted, strict=True) if (n & inside).sum() >= p.least), None)
                if chosen is not None:
                    break
                group = parent(group)
            if group is None:
                yield c, last, np.flatnonzero(last.rows), seen, None
            else:
                yield c, chosen, np.flatnonzero(chosen.rows & inside), seen & inside, inside

    def _adapted(self, levels, y: np.ndarray, issued: np.ndarray, seen_g: np.ndarray,
                 observed: np.ndarray) -> np.ndarray:
        """The levels adapted to the coverage of the bounds ``issued`` to the group's jobs already observed
        (``seen_g``: ended, or running with ``y`` a lower bound, ``observed`` False).  A stratum's observed
        coverage is trusted in proportion to its jobs seen, fully from ``ACI_FULL`` on: a small stratum's noise
        is not corrected for."""
        seen = np.isfinite(issued[:, 0]) & seen_g
        gain = self.coverage_gain * min(1.0, seen.sum() / ACI_FULL)
        return adaptive_levels(levels, y[seen], issued[seen], gain, observed=observed[seen])

    @staticmethod
    def _predict(m: str, est, X: _Columns, rows: np.ndarray, raw: dict, curves: dict, at, at_levels, at_curve) -> None:
        """``est``'s predictions of ``rows`` into ``raw[m]`` (and its quantile curve into ``curves[m]``: one pass of
        the boosters for both)."""
        if not len(rows):
            return
        Xs = X.rows(est, rows)
        if m in curves:
            both = est.predict_at(Xs, at)
            raw[m][rows] = both[:, at_levels]
            curves[m][rows] = both[:, at_curve]
        else:
            raw[m][rows] = est.predict(Xs)

    @staticmethod
    def _covering(select: tuple, cal: dict, r: np.ndarray, y: np.ndarray, habit: np.ndarray, levels) -> tuple:
        """The candidates whose bounds, as issued to ``r`` (ended jobs), covered no level demonstrably less than
        they should: by more than two standard errors (a habit's jobs missing together, ``metrics.coverage_se``)
        under the level, or under the best candidate's coverage where none reaches the level (a need past its
        request, which no capped bound covers).  All of them where none passes, or under two habits."""
        hit = np.stack([y[r, None] <= cal[m]["capped"][r] * (1 + 1e-9) for m in select], axis=1)  # jobs × cands × lv
        se = coverage_se(hit.reshape(len(r), -1), habit[r]).reshape(hit.shape[1:])
        if not np.isfinite(se).all():
            return select
        cov = hit.mean(axis=0)
        reach = np.minimum(np.asarray(levels, dtype=np.float64), cov.max(axis=0))
        return tuple(m for i, m in enumerate(select) if np.all(cov[i] >= reach - 2.0 * se[i])) or select

    @classmethod
    def _pick(cls, select: tuple, cal: dict, rows: np.ndarray, w: np.ndarray, first: str | None = None, *,
              y: np.ndarray, habit: np.ndarray, levels) -> str:
        """The candidate whose bounds, as issued to ``rows`` (jobs of the stratum predicted in earlier folds,
        out of sample, now ended), held the least capacity summed over the levels, among those that did not
        cover them demonstrably less than the levels (:meth:`_covering`); the first candidate where none was
        issued to every one of them.  Weighed on bounds issued before, not on the fold's own calibration, so
        that a candidate is not chosen for the luck of its calibration draw; and not for a calibration that ran
        low on them, as the tightest of several calibrated candidates tends to be."""
        issued = np.ones(len(rows), dtype=bool)
        for m in select:
            issued &= np.isfinite(cal[m]["capped"][rows]).all(axis=1)
        if not issued.any():
            return first or select[0]
        r = rows[issued]
        fair = cls._covering(select, cal, r, y, habit, levels)
        held = {m: float(np.sum(cal[m]["capped"][r] * w[r, None])) for m in fair}
        return min(fair, key=lambda m: (held[m], select.index(m)))

    def run(self, jobs: pd.DataFrame, target: str) -> RollingResult:
        spec = get_target(target)
        levels = tuple(float(x) for x in self.levels)
        rows = np.flatnonzero(eligible(jobs, target))
        rows = rows[np.argsort(epoch_s(jobs["submit_time"].iloc[rows]), kind="stable")]
        E = jobs.iloc[rows].reset_index(drop=True)
        X = submission_features(E, target, window=self.window, gpu_memory_bytes=self.gpu_memory_bytes)
        H = habit_history(E, target, window=self.window, gpu_memory_bytes=self.gpu_memory_bytes)
        X = _Columns(X, pd.concat([X, H], axis=1))
        meta = _meta(E, X.plain, target, self.gpu_memory_bytes)
        size = None
        if self.size_classes > 1:
            limit = pd.to_numeric(E["time_limit_s"], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan) \
                if "time_limit_s" in E else None
            asked = meta["request"].to_numpy(dtype=np.float64)
            if target == "walltime":  # a time limit is held in the plan for each of the job's cores
                asked, limit = request(E, "cpus"), asked
            size = sizes(asked, limit, self.size_classes)
        meta["stratum"] = strata(H, size)
        meta.insert(0, "row", rows)
        submit, end, y, req, start = (meta[c].to_numpy(dtype=np.float64)
                                      for c in ("submit_s", "end_s", "y", "request", "start_s"))
        org = origins(submit, warmup_days=self.warmup_days, test_days=self.test_days,
                      min_last_share=self.min_last_share)
        if self.start_s is not None:
            org = org[org + self.test_days * 86400 > self.start_s]
        joined = self.min_last_share > 0
        fold = fold_of(submit, org, self.test_days, open_last=joined) if len(org) else np.full(len(meta), -1)
        raw = {m: np.full((len(meta), len(levels)), np.nan) for m in self.models}
        curves = {m: np.full((len(meta), len(CURVE_LEVELS)), np.nan) for m, est in self.models.items()
                  if m in self.calibrated and hasattr(est, "predict_at")}
        at = np.union1d(levels, CURVE_LEVELS)
        at_levels, at_curve = np.searchsorted(at, levels), np.searchsorted(at, CURVE_LEVELS)
        cold_user = np.zeros(len(meta), dtype=bool)
        cold_family = np.zeros(len(meta), dtype=bool)
        fitted, rows, first_free = None, [], None
        # the candidates that read only the habit's past (the site rules): they learn next to nothing (a fallback, a
        # prior), so they predict from the first origin, any job out of sample, and calibrate on every ended job
        free = tuple(m for m, est in self.models.items() if m in self.calibrated and getattr(est, "reads_habits", False))
        # the other models are fitted from ``model_warmup_days`` on; the folds before are the free candidates' alone
        models_from = first_s = np.nanmin(submit) if len(submit) else np.nan
        if self.model_warmup_days is not None:
            models_from = first_s + self.model_warmup_days * DAY_S
        early = np.zeros(len(meta), dtype=bool)
        k0 = None
        # the fold whose refit predicted the job, and the one before it (predicting the same job in shadow)
        generation, previous_generation = np.full(len(meta), -1), np.full(len(meta), -1)
        refit_at, previous, shadow = -1, None, self.same_models and self.retrain_every > 1
        learned, first = {}, np.nanmin(submit) if len(submit) else np.nan  # seconds of history each refit learned
        previous_generation_at = -1
        shadows = {m: np.full_like(curves.get(m, raw[m]), np.nan) for m in self.models if m in self.calibrated} \
            if shadow else {}
        users = meta["user"].astype("string").fillna("(none)").to_numpy()
        fams = meta["family"].astype("string").fillna("(none)").to_numpy()
        for k, o in enumerate(org):
            test = np.flatnonzero(fold == k)
            info = {"fold": k, "origin": pd.Timestamp(o, unit="s", tz="UTC"), "test_jobs": len(test), "fit_s": 0.0}
            if o < models_from - 1e-6:
                tr = train_mask(end, submit, o, self.train_days)
                if free and tr.sum() >= self.min_train and len(test):
                    fits = {m: self.models[m].clone().fit(X.rows(self.models[m], tr), y[tr]) for m in free}
                    first_free = first_free or fits
                    for m, est in fits.items():
                        self._predict(m, est, X, test, raw, curves, at, at_levels, at_curve)
                    early[test] = True
                    info.update(train_jobs=int(tr.sum()), early=True)
                rows.append(info)
                continue
            k0 = k if k0 is None else k0
            if fitted is None or (k - k0) % self.retrain_every == 0:
                tr = train_mask(end, submit, o, self.train_days)
                if tr.sum() >= self.min_train:
                    t0 = time.perf_counter()
                    # the models going out predict in shadow only while they may stand in (``_pools``)
                    stands_in = fitted is not None and shadows and self._stands_in(learned, refit_at)
                    previous = {m: fitted[m] for m in shadows} if stands_in else None
                    previous_generation_at = refit_at
                    fitted = {m: est.clone().fit(X.rows(est, tr), y[tr]) for m, est in self.models.items()}
                    if first_free is None:
                        first_free = {m: fitted[m] for m in free}
                    seen_u, seen_f = set(users[tr]), set(fams[tr])
                    info.update(train_jobs=int(tr.sum()), fit_s=time.perf_counter() - t0, refit=True)
                    refit_at = k
                    learned[k] = o - first
            if fitted is None or not len(test):
                rows.append(info)
                continue
            for m, est in fitted.items():
                self._predict(m, est, X, test, raw, curves, at, at_levels, at_curve)
            generation[test] = refit_at
            previous_generation[test] = previous_generation_at
            if previous is not None:
                for m, est in previous.items():
                    shadows[m][test] = calibration_input(est, X.rows(est, test))
            cold_user[test] = ~np.isin(users[test], list(seen_u))
            cold_family[test] = ~np.isin(fams[test], list(seen_f))
            rows.append(info)
        out = meta.copy()
        out["fold"] = fold
        out["cold_user"] = cold_user
        out["cold_family"] = cold_family
        scored = np.zeros(len(meta), dtype=bool)
        # the uncapped calibration only where it is read: evaluate's quantile of need, or cap=False
        tags = (("capped", True), ("nocap", False)) if self.uncapped or not self.cap else (("capped", True),)
        cal = {m: {tag: np.full((len(meta), len(levels)), np.nan) for tag in ("capped", "nocap")}
               for m in self.models if m in self.calibrated}
        # the jobs the models predicted (all candidates where every one is free)
        modelled = next((m for m in self.models if m not in free), next(iter(self.models), None))
        predicted = np.isfinite(raw[modelled][:, 0]) if modelled else np.zeros(len(meta), bool)
        # the free candidates' predictions of the jobs before the first origin, for calibration: by the first
        # fit of them (the rules learn a fallback for an unknown request, ``habit_t`` a prior of two numbers)
        free = free if first_free else ()
        for m in free:
            rest = np.flatnonzero(~np.isfinite(raw[m][:, 0]) & (fold < 0))
            self._predict(m, first_free[m], X, rest, raw, curves, at, at_levels, at_curve)
        free_pred = np.any([np.isfinite(raw[m][:, 0]) for m in free], axis=0) if free else np.zeros(len(meta), bool)
        inputs = {m: curves.get(m, raw[m]) for m in cal}  # what each calibrator reads
        stratum = meta["stratum"].to_numpy() if self.strata else np.full(len(meta), "all", dtype=object)
        names, codes = np.unique(stratum.astype(str), return_inverse=True)
        select = tuple(m for m in (self.select or ()) if m in cal)
        # before any bounds were issued, a stratum with a history starts from the first candidate reading it
        habit_first = next((m for m in select if m in free), None)
        top = max(self.min_stratum, math.ceil(1.0 / (1.0 - max(levels)) - 1e-9) - 1)  # 99 jobs for 0.99
        best = np.full((len(meta), len(levels)), np.nan)
        source = np.full((len(meta), len(levels)), None, dtype=object)
        w = meta["w"].to_numpy(dtype=np.float64)
        habit = meta["habit"].to_numpy()
        for k, o in enumerate(org):
            is_early = bool(early[fold == k].any())
            test = np.flatnonzero((fold == k) & (early if is_early else predicted))
            # what is known at the origin: a need where the job ended, a lower bound where it still runs
            # (a run time: censored, read by Kaplan-Meier, see .censored), nothing else
            ended = end < o
            low = need_so_far(target, start, req, o)
            running = ~ended & np.isfinite(low) if low is not None else np.zeros(len(meta), dtype=bool)
            known = np.where(running, low, y) if low is not None else y
            cm = calibration_mask(end, submit, free_pred if is_early else predicted, o, self.cal_days)
            rows[k]["cal_jobs"] = int(cm.sum())
            cm_all = cm | (running & (free_pred if is_early else predicted) & (submit >= o - self.cal_days * DAY_S))
            cal_raw, split = None, False
            if len(test) and cm.sum() < self.min_cal and self.split_calibration and not is_early:
                split = True
                cm_all, cal_raw = self._split(X, y, end, submit, o, cal, running)
                cm = cm_all & ended
                rows[k]["cal_jobs"] = int(cm.sum())
            rows[k]["cal_running"] = int((cm_all & running).sum())
            if not len(test) or cm.sum() < self.min_cal:
                continue
            scored[test] = True
            pools = self._pools(cm_all, cal_raw, generation, previous_generation, test,
                                shadow and not split and not is_early, levels, learned)
            free_cm = free_pred & (ended | running) & (submit >= o - self.cal_days * DAY_S)
            here = free if is_early else tuple(cal)
            choose = tuple(m for m in select if m in here)
            for g, pool, idx, seen_g, inside in self._groups(names, codes, pools, ended, ended | running, test):
                t = test[codes[test] == g]
                cold = history_class(names[g]) == "cold"
                # no free candidate predicts a cold start: an early fold leaves it its request, as before the
                # first origin (each candidate is still calibrated on it, for its own record)
                issues = bool(choose) and not (is_early and cold)
                if issues:
                    # a candidate predicting none of the stratum's jobs (one reading the share of a request the
                    # log does not record) is not one here
                    able = tuple(m for m in choose if np.isfinite(inputs[m][t]).any()) or choose
                    pick = self._pick(able, cal, np.flatnonzero(cm & (codes == g)), w,
                                      None if cold or habit_first not in able else habit_first,
                                      y=y, habit=habit, levels=levels)
                for m in here:
                    on = idx
                    if m in free:
                        # the jobs predicted in earlier folds where the group has enough for its highest level, else
                        # every job the candidate predicted (those before the first origin too: histories then are
                        # short, and the long runs yet to end missing from them)
                        mine = np.flatnonzero(free_cm & predicted if inside is None else free_cm & predicted & inside)
                        on = mine if len(mine) >= top else np.flatnonzero(free_cm if inside is None else free_cm & inside)
                        scores_in, test_in = inputs[m][on], inputs[m][t]
                    else:
                        scores_in, test_in = pool.inputs(m, idx, inputs, shadows), pool.test_inputs(m, t, inputs, shadows)
                    for tag, cap in tags:
                        P = cal[m][tag]
                        c = calibrator(m in curves, levels, spec.log_offset, cap)
                        c.fit(scores_in, known[on], req[on],
                              effective_levels=self._adapted(levels, known, P, seen_g, ended),
                              observed=ended[on])
                        P[t] = c.transform(test_in, req[t])
                    if issues and m == pick:
                        pick_in = scores_in, test_in, on
                if issues:  # one candidate for every level, so that its bounds stay nested; its level adapted
                    # to what the stratum's issued bounds covered, whichever candidate each fold picked: a pick
                    # favours the candidate whose calibration runs low, which its own record does not show
                    c = calibrator(pick in curves, levels, spec.log_offset, True)
                    c.fit(pick_in[0], known[pick_in[2]], req[pick_in[2]],
                          effective_levels=self._adapted(levels, known, best, seen_g, ended),
                          observed=ended[pick_in[2]])
                    best[t] = c.transform(pick_in[1], req[t])
                    source[t] = pick
        out["scored"] = scored
        cols = {}
        for m in self.models:
            for j, lv in enumerate(levels):
                if m in cal:
                    cols[f"{m}@{lv}"] = cal[m]["capped" if self.cap else "nocap"][:, j]
                    cols[f"{m}_capped@{lv}"] = cal[m]["capped"][:, j]
                    cols[f"{m}_nocap@{lv}"] = cal[m]["nocap"][:, j]
                    cols[f"{m}_raw@{lv}"] = raw[m][:, j]
                else:
                    cols[f"{m}@{lv}"] = raw[m][:, j]
        for j, lv in enumerate(levels):
            if select:
                cols[f"best@{lv}"] = best[:, j]
                cols[f"best_source@{lv}"] = source[:, j]
        out = pd.concat([out, pd.DataFrame(cols)], axis=1)
        return RollingResult(target=target, levels=levels, models=tuple(self.models), jobs=out,
                             folds=pd.DataFrame(rows))
