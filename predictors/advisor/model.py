"""The advisor's model: fitted once per store, saved beside it (``STORE/model/``), loaded on every advice.

Per target, the LightGBM hurdle quantile model (``quantile_hurdle``) is fitted on the jobs that ended before
the trailing calibration window (``cal_days``, at most a quarter of the history's span), and the positions
along their own quantile curves where the jobs submitted in that window found their need are kept, sorted
(nested conformal prediction, as ``conformal.LevelCalibrator``): any level is then calibrated at advice time,
and so is the risk of any request.  A run still going at the history's end gives the position of its run so
far, a lower bound (``observed`` False): levels and risks are then read from the Kaplan–Meier distribution.  The
history figures a job submitted one second after the history's last job ended would see are tabled by group
(``feature_tables``).

On disk (``save_model``): ``manifest.json`` (format, the store's fingerprint, the fitted figures of each
estimator), each booster in LightGBM's own text format (``TARGET.classifier.txt``, ``TARGET.q0.txt`` …,
``TARGET.hit0.txt`` …), ``TARGET.scores.npy`` (with ``TARGET.observed.npy`` where some are lower bounds),
``TARGET.tables.parquet`` and ``history.parquet`` (the columns the advice's evidence reads, with each job's
family).  Loaded, the boosters are :class:`predictors.models.trees.Forest`
objects: advice never imports LightGBM and never refits.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from audit.families import job_family

from ..features import (
    TARGETS,
    TableIndex,
    actual,
    eligible,
    epoch_s,
    feature_tables,
    job_features,
    need_so_far,
    request,
)
from ..models import (
    CURVE_LEVELS,
    Estimator,
    Forest,
    HurdleQuantileGBM,
    conformal_shift,
    level_scores,
    read_curve,
)
from ..models.censored import km_share_at_most

#: 2: calibration scores are positions along a curve read from ``CURVE_LEVELS``' lowest level, 0.25 (format 1:
#: from 0.5); a model saved in another format is refitted, not misread
FORMAT = 2
FOLDER = "model"
#: the columns of the history the advice reads for its evidence
HISTORY_COLUMNS = ("job_id", "user", "account", "partition", "job_name", "state", "exit_code", "submit_time",
                   "start_time", "end_time", "elapsed_s", "time_limit_s", "req_cpus", "alloc_cpus", "req_mem_bytes",
                   "alloc_mem_bytes", "req_gpus", "alloc_gpus", "gpu_type", "req_nodes", "cpu_used_s",
                   "mem_peak_bytes", "gpu_util_mean", "gpu_mem_peak_bytes", "caveats")


class ModelError(ValueError):
    """No usable model: none saved, saved by another format, or fitted on another version of the store."""


@dataclass
class TargetModel:
    """One target's fitted model, its calibration and its history tables."""

    name: str
    estimator: HurdleQuantileGBM
    scores: np.ndarray             # sorted calibration scores (+inf: need above the curve's top)
    n_train: int
    n_calibration: int
    columns: list[str]
    tables: pd.DataFrame | Path    # in memory, or the saved file (read for one user and family at a time)
    n_no_request: int = 0          # training jobs that asked nothing for the target (no time limit, …)
    observed: np.ndarray | None = None  # per score, False where it is a lower bound (a run still going); None: all

    def table_index(self, user: str | None, family: str) -> TableIndex:
        if isinstance(self.tables, pd.DataFrame):
            return TableIndex(self.tables)
        import pyarrow.parquet as pq

        filters = [[("table", "=", "family"), ("family", "=", family)]] + ([[("user", "=", user)]] if user else [])
        return TableIndex(pq.read_table(self.tables, filters=filters).to_pandas())

    def curve(self, job: pd.DataFrame) -> np.ndarray:
        """The job's uncalibrated quantile curve at ``CURVE_LEVELS``."""
        user = job["user"].iloc[0]
        user = None if pd.isna(user) else str(user)
        index = self.table_index(user, str(job_family(job["job_name"]).iloc[0]))
        X = job_features(job, self.name, index)[self.columns]
        return self.estimator.predict_at(X, CURVE_LEVELS)[0]

    def quantile(self, curve: np.ndarray, level: float) -> float:
        """The calibrated quantile at ``level`` (a level past what the calibration jobs can vouch for reads the
        curve's top)."""
        return float(read_curve(curve[None, :], np.array([conformal_shift(self.scores, level, self.observed)]))[0, 0])

    def risk(self, curve: np.ndarray, value: float) -> tuple[float, str]:
        """P(need ≥ value), the risk that a job asking ``value`` reaches it, and whether it is ``"about"``,
        ``"at least"`` (below the curve's lowest level) or ``"at most"`` (past its top): the share of calibration
        jobs whose need lay as far or further along their curve than ``value`` lies along this one (conformal,
        ``(1 + count) / (n + 1)``; with runs still going among them, ``count`` is n times their Kaplan–Meier share
        at or past it).  *Reaching* counts: a job killed out of memory is recorded at its request, and a job using
        nearly all of it is taken to need all of it (``quantile_hurdle``)."""
        n = len(self.scores)
        pos = float(level_scores(np.array([value * (1 - 1e-9)]), curve[None, :])[0])
        bound = "about"
        if pos == 0.0 and value < curve[0]:
            bound = "at least"
        if not math.isfinite(pos) or pos >= len(curve) - 1:
            pos, bound = len(curve) - 1.0, "at most"
        if self.observed is not None and not self.observed.all():
            reach = n * (1.0 - km_share_at_most(self.scores, self.observed, pos - 1e-9))
        else:
            reach = n - int(np.searchsorted(self.scores, pos - 1e-9, side="left"))
        return min(1.0, (1 + reach) / (n + 1)), bound


class AdvisorModel(Estimator):
    """Every target's calibrated model, fitted on one history; ``fit`` returns ``self``."""

    def __init__(self, *, targets=None, cal_days: float = 28.0, min_jobs: int = 200, min_calibration: int = 50,
                 n_estimators: int = 60, random_state: int = 0):
        self.targets = targets
        self.cal_days = cal_days
        self.min_jobs = min_jobs
        self.min_calibration = min_calibration
        self.n_estimators = n_estimators
        self.random_state = random_state

    def fit(self, jobs: pd.DataFrame) -> AdvisorModel:
        jobs = jobs.reset_index(drop=True)
        if not len(jobs) or jobs["end_time"].isna().all():
            raise ValueError("the history has no finished jobs to learn from")
        self.last_end_ = jobs["end_time"].max()
        self.query_time_ = self.last_end_ + pd.Timedelta(seconds=1)
        first, last = jobs["submit_time"].min(), jobs["submit_time"].max()
        window = min(pd.Timedelta(days=self.cal_days), (last - first) / 4)  # short histories keep 3/4 to train
        self.cut_ = last - window
        self.first_submit_ = first
        self.n_jobs_ = len(jobs)
        cut = self.cut_.timestamp()
        end, sub = epoch_s(jobs["end_time"]), epoch_s(jobs["submit_time"])
        start = epoch_s(jobs["start_time"]) if "start_time" in jobs else np.full(len(jobs), np.nan)
        self.targets_: dict[str, TargetModel] = {}
        self.skipped_: dict[str, str] = {}
        for name, spec in TARGETS.items():
            if self.targets is not None and name not in self.targets:
                continue
            ok = eligible(jobs, name)
            tr, cal = ok & (end < cut), ok & (sub >= cut)
            if tr.sum() < self.min_jobs or cal.sum() < self.min_calibration:
                self.skipped_[name] = (f"{int(tr.sum())} jobs to train on and {int(cal.sum())} to calibrate on "
                                       f"(at least {self.min_jobs} and {self.min_calibration} needed)")
                continue
            X, tables = feature_tables(jobs, name, self.query_time_)
            y = actual(jobs, name)
            asked = request(jobs, name)
            # a run still going when the history ends has needed at least its run so far: a censored score
            # (Kaplan-Meier, ``models.censored``), so that the window's long runs count while they run
            low = need_so_far(name, start, asked, self.query_time_.timestamp())
            running = (~np.isfinite(end) & (sub >= cut) & np.isfinite(low)) if low is not None else np.zeros_like(cal)
            rows = cal | running
            est = HurdleQuantileGBM((0.5, 0.9), n_estimators=self.n_estimators, log_offset=spec.log_offset,
                                    random_state=self.random_state).fit(X[tr], y[tr])
            curve = est.predict_at(X[rows], CURVE_LEVELS)
            s = level_scores(np.where(running, low, y)[rows], curve)
            order = np.argsort(s, kind="stable")
            observed = ~running[rows][order]
            no_request = int((tr & ~(np.nan_to_num(asked, nan=0.0) > 0)).sum())
            self.targets_[name] = TargetModel(name, est, s[order], int(tr.sum()), int(rows.sum()), list(X.columns),
                                              tables, no_request, None if observed.all() else observed)
            _check_forests(est, X[cal].head(200))
        self.history_ = history_frame(jobs)
        return self

    def user_history(self, user: str | None) -> pd.DataFrame:
        """The past jobs of ``user`` (from the saved files when loaded)."""
        if getattr(self, "folder_", None) is not None:
            return read_history(self.folder_, user=user)
        h = self.history_
        return h[(h["user"] == user).fillna(False).to_numpy(dtype=bool)] if user else h.iloc[:0]

    def family_count(self, family: str) -> int:
        """How many past jobs of all users belong to ``family``."""
        if getattr(self, "folder_", None) is not None:
            return family_jobs(self.folder_, family)
        return int((self.history_["family"] == family).sum())


def history_frame(jobs: pd.DataFrame) -> pd.DataFrame:
    """The evidence columns of the history, with each job's family."""
    h = jobs[[c for c in HISTORY_COLUMNS if c in jobs.columns]].copy()
    h["family"] = job_family(jobs["job_name"]).astype("string")
    return h.reset_index(drop=True)


def _check_forests(est: HurdleQuantileGBM, X: pd.DataFrame) -> None:
    """The forests the model is saved as must predict what the boosters predict."""
    if not len(X):
        return
    want = est.predict_at(X, CURVE_LEVELS)
    got = _with_forests(est).predict_at(X, CURVE_LEVELS)
    if not np.allclose(got, want, rtol=1e-9, atol=1e-6):
        raise RuntimeError("the saved form of the model does not reproduce its predictions")


def _boosters(est: HurdleQuantileGBM) -> dict[str, object]:
    out = {} if est.classifier_ is None else {"classifier": est.classifier_}
    out.update({f"q{i}": b for i, b in enumerate(est.boosters_)})
    out.update({f"hit{i}": b for i, b in enumerate(est.hit_boosters_)})
    return out


def _text(booster) -> str:
    return booster if isinstance(booster, str) else booster.model_to_string()


def _with_forests(est: HurdleQuantileGBM) -> HurdleQuantileGBM:
    out = HurdleQuantileGBM(**est.get_params())
    for k, v in vars(est).items():
        if k.endswith("_"):
            setattr(out, k, v)
    out.classifier_ = None if est.classifier_ is None else Forest(_text(est.classifier_))
    out.boosters_ = [Forest(_text(b)) for b in est.boosters_]
    out.hit_boosters_ = [Forest(_text(b)) for b in est.hit_boosters_]
    return out


# ---- on disk ------------------------------------------------------------------------------------------------

def store_fingerprint(store: Path) -> dict:
    """What identifies the version of a store's job table the model was fitted on: its size and content hash
    (not its time stamp, so that a re-run writing the same jobs, or a copy, keeps the model current)."""
    import hashlib

    path = Path(store) / "jobs.parquet"
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return {"jobs_parquet_bytes": path.stat().st_size, "jobs_parquet_sha256": digest.hexdigest()}


def _now() -> str:
    """Now in UTC, or ``SOURCE_DATE_EPOCH`` when set (for byte-identical reruns)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    now = datetime.fromtimestamp(int(epoch), UTC) if epoch else datetime.now(UTC)
    return now.replace(microsecond=0).isoformat()


def _jsonable(v):
    if isinstance(v, tuple | list):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_jsonable(x) for x in v.tolist()]
    if isinstance(v, np.floating | np.integer):
        return v.item()
    return v


def _estimator_state(est: HurdleQuantileGBM) -> dict:
    return {"params": {k: _jsonable(v) for k, v in est.get_params().items()},
            "levels_": list(est.levels_), "grid_": est.grid_.tolist(), "hit_grid_": est.hit_grid_.tolist(),
            "vocab_": {c: [str(x) for x in idx] for c, idx in est.vocab_.items()}, "numeric_": list(est.numeric_),
            "hit_rate_": float(est.hit_rate_), "hit_quantiles_": np.asarray(est.hit_quantiles_).tolist(),
            "boosters": list(_boosters(est))}


def _estimator_from(state: dict, folder: Path, target: str) -> HurdleQuantileGBM:
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in state["params"].items()}
    est = HurdleQuantileGBM(**params)
    est.levels_ = tuple(state["levels_"])
    est.grid_, est.hit_grid_ = np.asarray(state["grid_"]), np.asarray(state["hit_grid_"])
    est.vocab_ = {c: pd.Index(v, dtype=object) for c, v in state["vocab_"].items()}
    est.numeric_ = list(state["numeric_"])
    est.hit_rate_ = float(state["hit_rate_"])
    est.hit_quantiles_ = np.asarray(state["hit_quantiles_"])
    forests = {k: Forest((folder / f"{target}.{k}.txt").read_text(encoding="utf-8")) for k in state["boosters"]}
    est.classifier_ = forests.get("classifier")
    est.boosters_ = [forests[k] for k in state["boosters"] if k.startswith("q")]
    est.hit_boosters_ = [forests[k] for k in state["boosters"] if k.startswith("hit")]
    return est


def save_model(model: AdvisorModel, folder: Path, *, fingerprint: dict | None = None,
               fitted_at: str | None = None) -> Path:
    """Write the model into ``folder`` (created; files replaced); ``fitted_at`` (ISO time) defaults to now, or
    ``SOURCE_DATE_EPOCH``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    targets = {}
    for name, t in model.targets_.items():
        for k, b in _boosters(t.estimator).items():
            (folder / f"{name}.{k}.txt").write_text(_text(b), encoding="utf-8")
        np.save(folder / f"{name}.scores.npy", t.scores)
        censored = folder / f"{name}.observed.npy"  # only where some scores are runs still going
        if t.observed is not None:
            np.save(censored, t.observed)
        elif censored.exists():
            censored.unlink()
        # sorted with small row groups: advice reads one user's and one family's rows
        t.tables.sort_values(["table", "user", "family"]).to_parquet(folder / f"{name}.tables.parquet", index=False,
                                                                     row_group_size=2048)
        targets[name] = {"n_train": t.n_train, "n_calibration": t.n_calibration, "n_no_request": t.n_no_request,
                         "n_running": 0 if t.observed is None else int((~t.observed).sum()),
                         "columns": t.columns,
                         "estimator": _estimator_state(t.estimator)}
    model.history_.sort_values(["user", "end_time"], kind="stable").to_parquet(
        folder / "history.parquet", index=False, row_group_size=4096)
    families = model.history_.groupby("family", dropna=False).size()
    pd.DataFrame({"family": families.index.astype("string"), "jobs": families.to_numpy()}).to_parquet(
        folder / "families.parquet", index=False)
    manifest = {"format": FORMAT, "fitted_at": fitted_at or _now(),
                "store": fingerprint, "params": model.get_params(),
                "history": {"jobs": model.n_jobs_, "first_submit": model.first_submit_.isoformat(),
                            "last_end": model.last_end_.isoformat(), "query_time": model.query_time_.isoformat(),
                            "calibration_from": model.cut_.isoformat()},
                "targets": targets, "skipped": model.skipped_}
    tmp = folder / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, folder / "manifest.json")  # the manifest last: a half-written model is never read
    return folder


def read_manifest(folder: Path) -> dict:
    path = Path(folder) / "manifest.json"
    if not path.exists():
        raise ModelError(f"{folder}: no advisor model (run `reclaim predict fit STORE`)")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("format") != FORMAT:
        raise ModelError(f"{folder}: model format {manifest.get('format')}, this version reads {FORMAT}: refit it")
    return manifest


def load_model(folder: Path, targets=None) -> AdvisorModel:
    """The saved model (only ``targets`` when given), its boosters as forests."""
    folder = Path(folder)
    m = read_manifest(folder)
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in m["params"].items()}
    model = AdvisorModel(**params)
    h = m["history"]
    model.n_jobs_ = h["jobs"]
    model.first_submit_, model.last_end_ = pd.Timestamp(h["first_submit"]), pd.Timestamp(h["last_end"])
    model.query_time_, model.cut_ = pd.Timestamp(h["query_time"]), pd.Timestamp(h["calibration_from"])
    model.skipped_ = m.get("skipped", {})
    model.fitted_at_ = m.get("fitted_at")
    model.fingerprint_ = m.get("store")
    model.targets_ = {}
    for name, t in m["targets"].items():
        if targets is not None and name not in targets:
            continue
        model.targets_[name] = TargetModel(
            name, _estimator_from(t["estimator"], folder, name), np.load(folder / f"{name}.scores.npy"),
            t["n_train"], t["n_calibration"], t["columns"], folder / f"{name}.tables.parquet",
            t.get("n_no_request", 0),
            np.load(folder / f"{name}.observed.npy") if (folder / f"{name}.observed.npy").exists() else None)
    model.folder_ = folder
    return model


def read_history(folder: Path, *, user: str | None) -> pd.DataFrame:
    """The saved history's jobs of ``user`` (none without a user): the evidence of one advice."""
    import pyarrow.parquet as pq

    if not user:
        return pq.read_table(Path(folder) / "history.parquet").schema.empty_table().to_pandas()
    return pq.read_table(Path(folder) / "history.parquet", filters=[("user", "=", user)]).to_pandas()


def family_jobs(folder: Path, family: str) -> int:
    """How many past jobs of all users belong to ``family``."""
    import pyarrow.parquet as pq

    t = pq.read_table(Path(folder) / "families.parquet", filters=[("family", "=", family)]).to_pandas()
    return int(t["jobs"].sum()) if len(t) else 0


def fit_store(store: Path, *, fitted_at: str | None = None, **params) -> Path:
    """Fit the advisor on a store's jobs and save it in ``STORE/model``; the folder written."""
    from audit.store import read_jobs

    store = Path(store)
    model = AdvisorModel(**params).fit(read_jobs(store))
    return save_model(model, store / FOLDER, fingerprint=store_fingerprint(store), fitted_at=fitted_at)


def is_current(store: Path) -> bool:
    """A saved model fitted on this version of the store's jobs."""
    try:
        m = read_manifest(Path(store) / FOLDER)
    except ModelError:
        return False
    return m.get("store") == store_fingerprint(store)
