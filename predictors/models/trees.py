"""LightGBM models evaluated from their text form, without LightGBM: the advisor predicts one job in
milliseconds and need not load the library (a third of a second) on every call.

:class:`Forest` reads the file ``Booster.model_to_string()`` writes and predicts as LightGBM's ``Tree::Predict``
does: at a numerical split a value goes left when ``value <= threshold``; a missing value (NaN, or zero where
the split's missing type is *zero*) follows the split's default direction, and NaN counts as 0 where the
missing type is *none*; at a categorical split the value's integer code goes left when it is in the split's
bitset, and NaN or a negative code goes right.  The output is the sum of the trees' leaves, through the
sigmoid for a binary objective.  ``predict(X, num_threads=…)`` has the signature of ``Booster.predict``, so a
fitted estimator can hold forests in place of boosters.
"""

from __future__ import annotations

import math

import numpy as np

CATEGORICAL_MASK = 1
DEFAULT_LEFT_MASK = 2
ZERO_THRESHOLD = 1e-35


class _Tree:
    __slots__ = ("feature", "threshold", "left", "right", "leaf", "categorical", "default_left", "missing",
                 "cat_bounds", "cat_words", "single")

    def __init__(self, fields: dict[str, str]):
        def num(key: str, dtype=np.float64) -> np.ndarray:
            # C's strtod through fromstring: the same doubles as float(word), three times faster than str arrays
            return np.fromstring(fields[key], sep=" ", dtype=dtype) if fields.get(key) else np.zeros(0, dtype=dtype)

        self.leaf = num("leaf_value")
        self.single = int(fields["num_leaves"]) == 1
        if self.single:
            return
        self.feature = num("split_feature", np.int64)
        self.threshold = num("threshold")
        dt = num("decision_type", np.int64)
        self.left = num("left_child", np.int64)
        self.right = num("right_child", np.int64)
        self.categorical = (dt & CATEGORICAL_MASK) > 0
        self.default_left = (dt & DEFAULT_LEFT_MASK) > 0
        self.missing = (dt >> 2) & 3
        self.cat_bounds = num("cat_boundaries", np.int64)
        self.cat_words = num("cat_threshold", np.int64)

    def _in_set(self, node: int, code: int) -> bool:
        k = int(self.threshold[node])
        lo, hi = self.cat_bounds[k], self.cat_bounds[k + 1]
        word = code // 32
        return word < hi - lo and bool((self.cat_words[lo + word] >> (code % 32)) & 1)

    def leaf_of(self, x) -> int:
        """The leaf one row (a sequence of floats) falls in."""
        node = 0
        while node >= 0:
            v = x[self.feature[node]]
            if self.categorical[node]:
                go_left = not math.isnan(v) and int(v) >= 0 and self._in_set(node, int(v))
            else:
                mt = self.missing[node]
                if math.isnan(v) and mt != 2:
                    v = 0.0
                if (mt == 1 and -ZERO_THRESHOLD <= v <= ZERO_THRESHOLD) or (mt == 2 and math.isnan(v)):
                    go_left = bool(self.default_left[node])
                else:
                    go_left = v <= self.threshold[node]
            node = self.left[node] if go_left else self.right[node]
        return ~node

    def leaves(self, X: np.ndarray) -> np.ndarray:
        """The leaf of every row of ``X``, vectorised over rows."""
        n = X.shape[0]
        if self.single:
            return np.zeros(n, dtype=np.int64)
        node = np.zeros(n, dtype=np.int64)
        rows = np.arange(n)
        active = node >= 0
        while active.any():
            r = rows[active]
            nd = node[r]
            v = X[r, self.feature[nd]]
            cat = self.categorical[nd]
            nan = np.isnan(v)
            mt = self.missing[nd]
            vv = np.where(nan & (mt != 2), 0.0, v)
            miss = ((mt == 1) & (np.abs(vv) <= ZERO_THRESHOLD)) | ((mt == 2) & nan)
            with np.errstate(invalid="ignore"):
                left = np.where(miss, self.default_left[nd], vv <= self.threshold[nd])
            if cat.any():
                ci = np.flatnonzero(cat)
                codes = np.where(nan[ci], -1, np.nan_to_num(v[ci], nan=-1.0)).astype(np.int64)
                k = self.threshold[nd[ci]].astype(np.int64)
                lo, hi = self.cat_bounds[k], self.cat_bounds[k + 1]
                word = np.where(codes >= 0, codes // 32, 0)
                inside = (codes >= 0) & (word < hi - lo)
                bits = self.cat_words[np.where(inside, lo + word, 0)] >> np.where(codes >= 0, codes % 32, 0)
                left[ci] = inside & ((bits & 1) == 1)
            node[r] = np.where(left, self.left[nd], self.right[nd])
            active = node >= 0
        return ~node


class Forest:
    """A LightGBM model read from its text form (``Booster.model_to_string()``)."""

    def __init__(self, text: str):
        header, _, rest = text.partition("\nTree=")
        head = dict(line.split("=", 1) for line in header.splitlines() if "=" in line)
        if int(head.get("num_class", "1")) != 1 or "average_output" in header.splitlines():
            raise ValueError("only single-output boosted models are read")
        objective = head.get("objective", "").split()
        self.objective = objective[0] if objective else ""
        self.sigmoid = next((float(o.split(":", 1)[1]) for o in objective[1:] if o.startswith("sigmoid:")), 1.0)
        self.num_features = int(head.get("max_feature_idx", "-1")) + 1
        self._body = rest.split("end of trees", 1)[0]
        self._trees: list[_Tree] | None = None

    @property
    def trees(self) -> list[_Tree]:
        """The trees, read on first use (a model whose part is never reached is never read)."""
        if self._trees is None:
            self._trees = []
            for block in self._body.split("\nTree="):
                fields = dict(line.split("=", 1) for line in block.splitlines()[1:] if "=" in line)
                if fields:
                    self._trees.append(_Tree(fields))
        return self._trees

    def raw(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.num_features:
            raise ValueError(f"expected {self.num_features} features, got array of shape {X.shape}")
        out = np.zeros(X.shape[0])
        if X.shape[0] <= 4:  # a few rows: one walk each is faster than array passes
            for i, row in enumerate(X.tolist()):
                s = 0.0
                for t in self.trees:
                    s += t.leaf[0] if t.single else t.leaf[t.leaf_of(row)]
                out[i] = s
            return out
        for t in self.trees:  # tree by tree, as LightGBM adds them
            out += t.leaf[t.leaves(X)]
        return out

    def predict(self, X: np.ndarray, num_threads: int | None = None) -> np.ndarray:
        """As ``Booster.predict`` (``num_threads`` is accepted and ignored)."""
        raw = self.raw(X)
        if self.objective == "binary":
            return 1.0 / (1.0 + np.exp(-self.sigmoid * raw))
        return raw
