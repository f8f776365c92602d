"""Linear quantile regression (statsmodels ``QuantReg``) on logs of the request and the user's history."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .base import Estimator, check_levels, inverse_log, log_transform, non_crossing

#: history columns used as regressors; each missing value is replaced by the log request
HISTORY = ("user_last1", "user_last2", "user_mean", "user_q90", "userreq_last1", "family_q50")


class LinearQuantile(Estimator):
    """One ``QuantReg`` per level on log(y + offset) with an intercept, the log request, history columns
    (missing → log request) and a cold-start indicator.  Fits on the most recent ``max_rows`` rows."""

    def __init__(self, levels=(0.5, 0.9, 0.99), *, log_offset: float = 1.0, history=HISTORY,
                 max_rows: int = 20_000, max_iter: int = 2000):
        self.levels = levels
        self.log_offset = log_offset
        self.history = history
        self.max_rows = max_rows
        self.max_iter = max_iter

    def _design(self, X: pd.DataFrame) -> np.ndarray:
        off = self.log_offset
        req = X["request"].to_numpy(dtype=np.float64, na_value=np.nan)
        lreq = log_transform(np.where(np.isfinite(req), req, self.request_fill_), off)
        cols = [np.ones(len(X)), lreq]
        for c in self.history:
            v = X[c].to_numpy(dtype=np.float64, na_value=np.nan)
            cols.append(np.where(np.isfinite(v), log_transform(v, off), lreq))
        cols.append((X["user_count"].to_numpy(dtype=np.float64, na_value=0.0) == 0).astype(np.float64))
        return np.column_stack(cols)

    def fit(self, X: pd.DataFrame, y: np.ndarray) -> LinearQuantile:
        self.levels_ = check_levels(self.levels)
        y = np.asarray(y, dtype=np.float64)
        if len(y) > self.max_rows:
            X, y = X.iloc[-self.max_rows:], y[-self.max_rows:]
        req = X["request"].to_numpy(dtype=np.float64, na_value=np.nan)
        self.request_fill_ = float(np.nanmedian(req)) if np.isfinite(req).any() else float(np.nanmedian(y))
        D = self._design(X)
        z = log_transform(y, self.log_offset)
        keep = np.std(D, axis=0) > 0
        keep[0] = True
        self.columns_ = keep
        # imported here, not at the top: statsmodels takes a second to load, and LightGBM right-sizing never fits this model
        from statsmodels.regression.quantile_regression import QuantReg

        model = QuantReg(z, D[:, keep])
        self.coef_ = np.vstack([model.fit(q=a, max_iter=self.max_iter).params for a in self.levels_])
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        D = self._design(X)[:, self.columns_]
        z = non_crossing(D @ self.coef_.T)
        return inverse_log(z, self.log_offset)
