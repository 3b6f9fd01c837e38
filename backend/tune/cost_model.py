"""Cost models of the tuner: predict which configs of a kernel run fastest from the features
of their lowered TIR (`features.tir_features`), without measuring them.

    model = XGBoostModel()
    model.fit(features, costs, groups)   # costs in seconds, None/NaN/inf for errors;
                                         # groups: one id per row (the task), or None
    scores = model.predict(features)     # higher = predicted faster (a ranking score)
    model.save(path); XGBoostModel.load(path)

`XGBoostModel` is a gradient-boosted tree ranker (xgboost, objective `rank:pairwise`): within
each group (one task) it learns the order of the configs by speed, so records of different
kernels train one model whatever their absolute times (transfer: a model fit on earlier
tasks' records ranks a new task's configs before any of them is measured). Within a group
the label is the speed relative to the group's best (`best / cost` in (0, 1]); failed
configs get 0, below every working one. `RandomModel` scores at random: the baseline a
model-guided search must beat.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .features import FEATURE_COUNT

FORMAT = "relay-cost-model"
FORMAT_VERSION = 1


@runtime_checkable
class CostModel(Protocol):
    """What the search needs of a model: fit on measured records, score unmeasured ones."""

    def fit(
        self,
        features: np.ndarray,
        costs: np.ndarray | Sequence[float | None],
        groups: np.ndarray | Sequence[Any] | None = None,
    ) -> None:
        """Learn from rows of `features` with measured `costs` (seconds; None, NaN or inf
        for configs that failed), grouped by task (`groups`, one id per row; None: one)."""
        ...

    def predict(self, features: np.ndarray) -> np.ndarray:
        """A score per row: higher means predicted faster."""
        ...

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model to `path`."""
        ...

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CostModel:
        """The model `save` wrote to `path`."""
        ...


def _costs_array(costs: np.ndarray | Sequence[float | None]) -> np.ndarray:
    """Costs as float64 with every failure (None, NaN, inf, <= 0) as NaN."""
    out = np.array([np.nan if c is None else float(c) for c in costs], np.float64)
    out[~np.isfinite(out) | (out <= 0)] = np.nan
    return out


def _group_ids(groups: np.ndarray | Sequence[Any] | None, n: int) -> np.ndarray:
    """Dense integer ids (0, 1, ...) in order of first appearance."""
    if groups is None:
        return np.zeros(n, np.int64)
    if len(groups) != n:
        raise ValueError(f"{len(groups)} group ids for {n} records")
    ids: dict[Any, int] = {}
    return np.array([ids.setdefault(g, len(ids)) for g in groups], np.int64)


def relevance(costs: np.ndarray | Sequence[float | None], groups: np.ndarray) -> np.ndarray:
    """Ranking labels: per group `best / cost` in (0, 1], 0 for failures."""
    c = _costs_array(costs)
    labels = np.zeros(len(c))
    for g in np.unique(groups):
        rows = groups == g
        ok = rows & ~np.isnan(c)
        if ok.any():
            labels[ok] = np.nanmin(c[ok]) / c[ok]
    return labels


def _check_features(features: np.ndarray) -> np.ndarray:
    x = np.asarray(features, np.float64)
    if x.ndim != 2:
        raise ValueError(f"features must be a matrix (rows, {FEATURE_COUNT}), got {x.shape}")
    return x


class XGBoostModel:
    """A gradient-boosted tree ranker over TIR features (module docstring)."""

    DEFAULT_PARAMS: dict[str, Any] = {
        "objective": "rank:pairwise",
        "lambdarank_pair_method": "mean",
        "lambdarank_num_pair_per_sample": 8,
        "eta": 0.2,
        "max_depth": 6,
        "min_child_weight": 1,
        "subsample": 1.0,
        "gamma": 0.0,
        "tree_method": "hist",
        "nthread": 1,
    }

    def __init__(
        self, rounds: int = 120, seed: int = 0, params: dict[str, Any] | None = None
    ) -> None:
        self.rounds = rounds
        self.seed = seed
        self.params = {**self.DEFAULT_PARAMS, **(params or {}), "seed": seed}
        self.booster: Any = None
        self.feature_count: int | None = None
        self.trained_records = 0

    def fit(
        self,
        features: np.ndarray,
        costs: np.ndarray | Sequence[float | None],
        groups: np.ndarray | Sequence[Any] | None = None,
    ) -> None:
        """Train from scratch on the records (see `CostModel.fit`); groups without at least
        two distinct labels teach nothing and are dropped. With nothing to learn the model
        stays (or becomes) untrained and predicts zeros."""
        import xgboost as xgb

        x = _check_features(features)
        if len(costs) != len(x):
            raise ValueError(f"{len(costs)} costs for {len(x)} feature rows")
        gid = _group_ids(groups, len(x))
        labels = relevance(costs, gid)
        keep = np.zeros(len(x), bool)
        for g in np.unique(gid):
            rows = gid == g
            if len(np.unique(labels[rows])) > 1:
                keep |= rows
        self.feature_count = x.shape[1]
        if not keep.any():
            self.booster = None
            self.trained_records = 0
            return
        order = np.argsort(gid[keep], kind="stable")
        matrix = xgb.DMatrix(
            x[keep][order], label=labels[keep][order], qid=gid[keep][order], nthread=1
        )
        self.booster = xgb.train(self.params, matrix, num_boost_round=self.rounds)
        self.trained_records = int(keep.sum())

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Ranking scores, higher = predicted faster (zeros before any useful fit)."""
        x = _check_features(features)
        if self.booster is None or len(x) == 0:
            return np.zeros(len(x))
        if self.feature_count is not None and x.shape[1] != self.feature_count:
            raise ValueError(f"the model takes {self.feature_count} features, got {x.shape[1]}")
        return np.asarray(self.booster.inplace_predict(x), np.float64)

    def save(self, path: str | os.PathLike[str]) -> None:
        """One JSON file: the booster (xgboost's JSON model) with the model's metadata."""
        booster = None
        if self.booster is not None:
            booster = json.loads(bytes(self.booster.save_raw(raw_format="json")).decode())
        doc = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "kind": "xgboost",
            "feature_count": self.feature_count,
            "rounds": self.rounds,
            "seed": self.seed,
            "params": self.params,
            "trained_records": self.trained_records,
            "booster": booster,
        }
        tmp = Path(f"{os.fspath(path)}.tmp")
        tmp.write_text(json.dumps(doc))
        tmp.replace(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> XGBoostModel:
        """The model `save` wrote (ValueError for another file)."""
        import xgboost as xgb

        doc = _read_doc(path, "xgboost")
        model = cls(rounds=int(doc["rounds"]), seed=int(doc["seed"]), params=doc["params"])
        model.feature_count = doc["feature_count"]
        model.trained_records = int(doc["trained_records"])
        if doc["booster"] is not None:
            booster = xgb.Booster()
            booster.load_model(bytearray(json.dumps(doc["booster"]).encode()))
            model.booster = booster
        return model


class RandomModel:
    """Scores at random (seeded): what model-guided search is compared against."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def fit(
        self,
        features: np.ndarray,
        costs: np.ndarray | Sequence[float | None],
        groups: np.ndarray | Sequence[Any] | None = None,
    ) -> None:
        """Learns nothing."""

    def predict(self, features: np.ndarray) -> np.ndarray:
        """Uniform random scores."""
        return self.rng.random(len(_check_features(features)))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the seed."""
        doc = {"format": FORMAT, "version": FORMAT_VERSION, "kind": "random", "seed": self.seed}
        Path(path).write_text(json.dumps(doc))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RandomModel:
        """The model `save` wrote."""
        return cls(seed=int(_read_doc(path, "random")["seed"]))


def _read_doc(path: str | os.PathLike[str], kind: str) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{os.fspath(path)}: not a cost model file ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{os.fspath(path)}: not a cost model file")
    if doc.get("version") != FORMAT_VERSION:
        raise ValueError(f"{os.fspath(path)}: cost model format version {doc.get('version')}")
    if doc.get("kind") != kind:
        raise ValueError(f"{os.fspath(path)}: a {doc.get('kind')} model, not {kind}")
    return doc


def load_model(path: str | os.PathLike[str]) -> XGBoostModel | RandomModel:
    """Whichever model `save` wrote to `path`."""
    try:
        kind = json.loads(Path(path).read_text()).get("kind")
    except (OSError, json.JSONDecodeError, AttributeError) as e:
        raise ValueError(f"{os.fspath(path)}: not a cost model file ({e})") from None
    return RandomModel.load(path) if kind == "random" else XGBoostModel.load(path)


def kendall_tau(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Kendall's tau-b between two orderings (ties counted as neither), in [-1, 1]."""
    x, y = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if len(x) != len(y):
        raise ValueError("kendall_tau of sequences of different lengths")
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    upper = np.triu_indices(len(x), 1)
    dx, dy = dx[upper], dy[upper]
    concordant_minus_discordant = float(np.sum(dx * dy))
    denom = float(np.sqrt(np.sum(dx != 0) * np.sum(dy != 0)))
    return concordant_minus_discordant / denom if denom else 0.0


__all__ = [
    "CostModel",
    "RandomModel",
    "XGBoostModel",
    "kendall_tau",
    "load_model",
    "relevance",
]
