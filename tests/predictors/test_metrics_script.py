"""Metrics on hand-computed cases; job-script parsing and hashing."""

from __future__ import annotations

import numpy as np
import pytest

from predictors.features.script import hash_tokens, sbatch_directives, script_features, script_tokens
from predictors.features.targets import actual, card_memory, request
from predictors.models.metrics import metric_set, pinball, precision_recall


def test_metrics_by_hand():
    y = np.array([10.0, 20.0, 30.0, 40.0])
    q = np.array([15.0, 20.0, 20.0, 80.0])
    r = np.array([100.0, 100.0, 100.0, 100.0])
    w = np.array([1.0, 1.0, 2.0, 0.0])
    m = metric_set(y, q, r, w, 0.9)
    assert m["coverage"] == 0.75 and m["under_rate"] == 0.25
    assert m["overprov_ratio"] == pytest.approx(np.median([1.5, 1.0, 2 / 3, 2.0]))
    assert m["recovered_fraction"] == pytest.approx(1 - (15 + 20 + 40) / 400)
    # pinball: 0.1·5 (over) + 0 + 0.9·10 (under) + 0.1·40 (over), mean of 4
    assert m["pinball"] == pytest.approx((0.5 + 0 + 9 + 4) / 4)
    assert pinball(y, y, 0.5) == 0.0


def test_precision_recall_by_hand():
    pr = precision_recall(np.array([1, 1, 0, 0, 1], bool), np.array([1, 0, 1, 0, 0], bool))
    assert pr["precision"] == pytest.approx(1 / 3) and pr["recall"] == 0.5 and pr["base_rate"] == 0.4


SCRIPT = """#!/bin/bash
#SBATCH --job-name=relax_0042
#SBATCH -t 02:00:00
#SBATCH --mem=16G
#SBATCH --gres gpu:a100:2
#SBATCH -c8
module load gromacs/2023.1 cuda/12.1
export OMP_NUM_THREADS=8
srun gmx_mpi mdrun -deffnm run_17 -nsteps 50000
"""


def test_sbatch_directives():
    d = sbatch_directives(SCRIPT)
    assert d == {"job-name": "relax_0042", "time": "02:00:00", "mem": "16G", "gres": "gpu:a100:2",
                 "cpus-per-task": "8"}


def test_script_tokens_and_hashing_are_stable():
    toks = script_tokens(SCRIPT)
    assert "module:gromacs" in toks and "module:cuda" in toks
    assert "exe:gmx_mpi" in toks and "arg:run_#" in toks and "sbatch:time=#:#:#" in toks
    a = hash_tokens([toks], 16)
    assert a.shape == (1, 16) and np.abs(a).sum() <= len(toks) and np.abs(a).sum() > 0
    np.testing.assert_array_equal(a, hash_tokens([script_tokens(SCRIPT)], 16))
    f = script_features([SCRIPT, None], 16)
    assert np.isnan(f[1]).all() and np.isfinite(f[0]).all()


def test_targets_from_the_generated_month(small_month):
    j = small_month
    el = j["elapsed_s"].astype("float64").to_numpy(na_value=np.nan)
    cpus = actual(j, "cpus")
    ok = np.isfinite(cpus)
    np.testing.assert_allclose(cpus[ok], j["cpu_used_s"].astype("float64").to_numpy()[ok] / el[ok])
    gpu = j["alloc_gpus"].fillna(0).to_numpy() > 0
    assert np.isfinite(actual(j, "gpu_memory")[~gpu]).sum() == 0
    assert np.isfinite(request(j, "gpu_memory")[gpu & j["gpu_type"].notna().to_numpy()]).all()


def test_card_memory_lookup():
    import pandas as pd

    got = card_memory(pd.Series(["a100", "NVIDIA-H100-80GB", None, "weird"]))
    assert got[0] == 80 * 2**30 and got[1] == 80 * 2**30 and np.isnan(got[2]) and np.isnan(got[3])


def test_script_features_join_the_submission_features(small_month):
    from predictors.features.submission import submission_features

    j = small_month.head(50)
    scripts = [SCRIPT if i % 2 else None for i in range(len(j))]
    f = submission_features(j, "walltime", scripts=scripts, n_hash=8)
    h = f[[f"script_h{i:02d}" for i in range(8)]].to_numpy()
    assert np.isnan(h[0::2]).all() and np.isfinite(h[1::2]).all()
    assert (h[1] == h[3]).all()  # same script, same hashed vector
