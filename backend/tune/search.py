"""Model-guided search: which configs of a task to measure next, and which task to tune next.

    cache = FeatureCache(task)                      # features of configs, lowered once
    model.fit(*training_data([(task, measured)], {task.key: cache}))
    batch = propose(task, model, measured, 16, rng, cache=cache)
    scheduler = TaskScheduler([t.weight for t in tasks])
    i = scheduler.next(); ...; scheduler.update(i, best_cost)

`propose` runs several simulated-annealing chains over the task's space (a step moves to
a random neighbor, one knob changed; it is taken when the model scores it higher, or with
probability `exp(Δ / T)` as the temperature `T` falls to 0), starting from the best
measured configs and random ones, and returns the best-scored distinct configs it saw that
are not measured yet; each slot of the batch is instead a random unmeasured config with
probability `epsilon` (all of them while the model knows nothing). Small spaces are scored
whole instead. A config whose lowering fails scores lowest.

Configs of a space often lower to the same loop IR (a knob that does not matter at that
point: `parallel_rows` without `parallel`, a split the extent makes trivial), and timing
the same kernel twice only measures noise. `propose` therefore returns distinct kernels:
a candidate whose loop IR (`kernel_digest`, a hash of its printed TIR) equals that of a
measured config or of one already in the batch is skipped, and reported in `duplicates`
(config -> the config it duplicates) when the caller passes that dict. After measuring,
`duplicate_records` turns them into log records (`duplicate_of`: the measured config, and
its cost) so a resumed run knows them without measuring; a trial budget counts only
measured kernels.

`TaskScheduler` hands out batches: first `warmup` rounds of round-robin, then to the task
with the largest estimated gain `weight x (best so far - predicted best)`, where the
predicted best is the caller's estimate, or the best so far extrapolated from its recent
improvement (with a floor that shrinks as the task gets trials, so no task starves).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from typing import Any, Protocol

import numpy as np

from ..tir.printer import astext
from .cost_model import CostModel
from .features import FEATURE_COUNT, tir_features


class _Space(Protocol):
    size: int

    def random(self, rng: np.random.Generator) -> Any: ...
    def neighbors(self, config: Any, rng: np.random.Generator, count: int) -> list[Any]: ...
    def config_at(self, i: int) -> Any: ...


class _Task(Protocol):
    key: str
    space: Any

    def lower(self, config: Any) -> Any: ...


def kernel_digest(func: Any) -> str:
    """A stable hash of a lowered kernel's printed loop IR: equal for configs that give the
    same kernel."""
    return hashlib.sha256(astext(func).encode()).hexdigest()[:24]


class FeatureCache:
    """The `tir_features` and `kernel_digest` of a task's configs, each lowered once; None
    for a config whose lowering fails. `lower_seconds` / `lowered` add up the lowerings
    done (what a search spends on features)."""

    def __init__(self, task: _Task) -> None:
        self.task = task
        self._rows: dict[Any, np.ndarray | None] = {}
        self._digests: dict[Any, str | None] = {}
        self.lower_seconds = 0.0
        self.lowered = 0

    def has(self, config: Any) -> bool:
        """Whether `config` was lowered already (its row and digest cost nothing)."""
        return config in self._rows

    def mean_lower_seconds(self) -> float | None:
        """The mean seconds of one lowering so far (None before the first)."""
        return self.lower_seconds / self.lowered if self.lowered else None

    def _lower(self, config: Any) -> None:
        start = time.perf_counter()
        self.lowered += 1
        try:
            func = self.task.lower(config)
            self._rows[config] = tir_features(func)
            self._digests[config] = kernel_digest(func)
        except Exception:
            self._rows[config] = None
            self._digests[config] = None
        self.lower_seconds += time.perf_counter() - start

    def row(self, config: Any) -> np.ndarray | None:
        """The features of `config` (None when it cannot be lowered)."""
        if config not in self._rows:
            self._lower(config)
        return self._rows[config]

    def digest(self, config: Any) -> str | None:
        """The `kernel_digest` of `config`'s loop IR (None when it cannot be lowered)."""
        if config not in self._digests:
            self._lower(config)
        return self._digests[config]

    def matrix(self, configs: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """(features of `configs`, one row each; whether each lowered). Failed rows are 0."""
        out = np.zeros((len(configs), FEATURE_COUNT))
        ok = np.zeros(len(configs), bool)
        for i, c in enumerate(configs):
            r = self.row(c)
            if r is not None:
                out[i], ok[i] = r, True
        return out, ok

    def __len__(self) -> int:
        return len(self._rows)


def training_data(
    records: Iterable[tuple[_Task, Mapping[Any, float | None]]],
    caches: dict[str, FeatureCache] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features, costs, group ids) for `CostModel.fit` from each task's measured configs
    (cost None for an error); one group per task key, so records of several tasks train
    one model (what warms up the search of a new task). `caches` (by task key) are used
    and filled."""
    caches = {} if caches is None else caches
    rows: list[np.ndarray] = []
    costs: list[float] = []
    groups: list[str] = []
    for task, measured in records:
        cache = caches.setdefault(task.key, FeatureCache(task))
        for config, cost in measured.items():
            r = cache.row(config)
            if r is None:
                continue
            rows.append(r)
            costs.append(math.nan if cost is None else float(cost))
            groups.append(task.key)
    x = np.stack(rows) if rows else np.zeros((0, FEATURE_COUNT))
    return x, np.asarray(costs, np.float64), np.asarray(groups, object)


class LoweringBudget:
    """How many configs not lowered before a search may still lower to score them (None:
    no limit). A config it cannot afford scores lowest, so annealing moves among the
    configs already lowered once the budget is spent."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit

    def admits(self, cache: FeatureCache, config: Any) -> bool:
        """Whether `config` may be scored (lowered already, or paid for now)."""
        if self.left is None or cache.has(config):
            return True
        if self.left <= 0:
            return False
        self.left -= 1
        return True


def _scores(
    model: CostModel,
    cache: FeatureCache,
    configs: Sequence[Any],
    budget: LoweringBudget | None = None,
) -> np.ndarray:
    s = np.full(len(configs), -np.inf)
    if budget is not None:
        keep = [i for i, c in enumerate(configs) if budget.admits(cache, c)]
    else:
        keep = list(range(len(configs)))
    if not keep:
        return s
    x, ok = cache.matrix([configs[i] for i in keep])
    if ok.any():
        s[np.asarray(keep)[ok]] = model.predict(x[ok])
    return s


def _random_unmeasured(
    space: _Space,
    taken: set[Any],
    rng: np.random.Generator,
    count: int,
    admit: Callable[[Any], bool] | None = None,
) -> list[Any]:
    """Up to `count` distinct random configs not in `taken` (each drawn is added to it) that
    `admit` accepts (all, without it)."""
    out: list[Any] = []
    if count <= 0:
        return out
    for _ in range(20 * count + 100):
        if len(out) == count or len(taken) >= space.size:
            break
        c = space.random(rng)
        if c not in taken:
            taken.add(c)
            if admit is None or admit(c):
                out.append(c)
    if len(out) < count and len(taken) < space.size:  # a nearly exhausted space: scan it
        for i in rng.permutation(space.size):
            c = space.config_at(int(i))
            if c not in taken:
                taken.add(c)
                if admit is None or admit(c):
                    out.append(c)
                if len(out) == count:
                    break
    return out


class _Kernels:
    """The distinct kernels of a task's measured and picked configs, by `kernel_digest`."""

    def __init__(
        self, cache: FeatureCache, known: Iterable[Any], duplicates: dict[Any, Any] | None
    ) -> None:
        self.cache = cache
        self.duplicates = duplicates
        self.by_digest: dict[str, Any] = {}
        for c in known:
            d = cache.digest(c)
            if d is not None:
                self.by_digest.setdefault(d, c)

    def admit(self, config: Any) -> bool:
        """Whether `config` is a new kernel (then it is one from now on); a config that
        cannot be lowered is admitted (its measurement records the build error)."""
        d = self.cache.digest(config)
        if d is None:
            return True
        original = self.by_digest.get(d)
        if original is None:
            self.by_digest[d] = config
            return True
        if self.duplicates is not None:
            self.duplicates[config] = original
        return False


def anneal(
    space: _Space,
    score: Any,
    starts: Sequence[Any],
    rng: np.random.Generator,
    steps: int = 60,
    temperature: float = 1.0,
    patience: int = 20,
    keep: int = 64,
    exclude: set[Any] | frozenset[Any] = frozenset(),
) -> dict[Any, float]:
    """Simulated annealing from each of `starts` at once (one chain each): `score(configs)`
    gives an array, higher is better; the temperature falls linearly from `temperature`
    (in units of the spread of the scores seen) to 0 over `steps`. Stops early when the
    best `keep` configs not in `exclude` have not changed for `patience` steps. Returns
    every config scored, with its score."""
    seen: dict[Any, float] = {}
    current = list(starts)
    cur = np.asarray(score(current), np.float64)
    seen.update(zip(current, cur.tolist()))
    spread = float(np.std(cur[np.isfinite(cur)])) if np.isfinite(cur).any() else 0.0
    top = _top_set(seen, exclude, keep)
    stale = 0
    for step in range(steps):
        t = temperature * (1.0 - step / max(steps, 1))
        moves = []
        for c in current:
            nb = space.neighbors(c, rng, 1)
            moves.append(nb[0] if nb else c)
        new = np.asarray(score(moves), np.float64)
        seen.update(zip(moves, new.tolist()))
        finite = np.asarray([v for v in seen.values() if math.isfinite(v)])
        spread = float(np.std(finite)) if len(finite) > 1 else spread
        scale = max(spread, 1e-12) * t
        for i in range(len(current)):
            if not math.isfinite(new[i]):
                continue
            delta = new[i] - cur[i]
            if (
                delta >= 0
                or not math.isfinite(cur[i])
                or (scale > 0 and rng.random() < math.exp(delta / scale))
            ):
                current[i], cur[i] = moves[i], new[i]
        now = _top_set(seen, exclude, keep)
        stale = stale + 1 if now == top else 0
        top = now
        if stale >= patience:
            break
    return seen


def _top_set(seen: Mapping[Any, float], exclude: Any, keep: int) -> frozenset[Any]:
    ranked = sorted((c for c in seen if c not in exclude), key=lambda c: -seen[c])
    return frozenset(ranked[:keep])


def propose(
    task: _Task,
    model: CostModel,
    measured: Mapping[Any, float | None],
    batch: int,
    rng: np.random.Generator,
    epsilon: float = 0.05,
    *,
    cache: FeatureCache | None = None,
    chains: int = 8,
    steps: int = 60,
    exhaustive_limit: int = 128,
    trained: bool = True,
    duplicates: dict[Any, Any] | None = None,
    max_lowerings: int | None = None,
) -> list[Any]:
    """Up to `batch` configs of `task` to measure next, none of them in `measured`, each a
    kernel (loop IR) that no measured config and no other pick gives (module docstring).
    Candidates skipped as such duplicates go to `duplicates` (config -> the measured or
    picked config with the same kernel) when given. `trained=False` (a model that has seen
    no record) makes the whole batch random; so does a model whose scores are all equal.
    `max_lowerings` caps the configs not in `cache` yet that scoring may lower (lowering
    is what a search costs: ~0.3 s per Winograd config); None scores without a cap."""
    space: _Space = task.space
    cache = cache if cache is not None else FeatureCache(task)
    kernels = _Kernels(cache, measured, duplicates)
    taken: set[Any] = set(measured)
    remaining = space.size - len(taken)
    batch = min(batch, max(remaining, 0))
    if batch <= 0:
        return []
    n_random = int(rng.binomial(batch, epsilon)) if trained else batch
    picks: list[Any] = []
    if n_random < batch:
        budget = LoweringBudget(max_lowerings)

        def score(configs: Sequence[Any]) -> np.ndarray:
            return _scores(model, cache, configs, budget)

        if space.size <= exhaustive_limit:
            order = range(space.size) if max_lowerings is None else rng.permutation(space.size)
            everything = [space.config_at(int(i)) for i in order]
            seen = dict(zip(everything, score(everything).tolist()))
        else:
            ok = sorted(
                ((c, v) for c, v in measured.items() if v is not None and math.isfinite(v)),
                key=lambda cv: cv[1],
            )
            starts = [c for c, _ in ok[: chains // 2]]
            starts += [space.random(rng) for _ in range(chains - len(starts))]
            seen = anneal(space, score, starts, rng, steps, keep=batch, exclude=taken)
        candidates = [(c, v) for c, v in seen.items() if c not in taken and math.isfinite(v)]
        values = [v for _, v in candidates]
        if candidates and max(values) > min(values):
            candidates.sort(key=lambda cv: -cv[1])
            for c, _ in candidates:
                if len(picks) == batch - n_random:
                    break
                taken.add(c)
                if kernels.admit(c):
                    picks.append(c)
    picks += _random_unmeasured(space, taken, rng, batch - len(picks), kernels.admit)
    return picks


def duplicate_records(
    task: Any,
    duplicates: Mapping[Any, Any],
    measured: MutableMapping[Any, float | None],
) -> list[dict[str, Any]]:
    """The log records of the configs `propose` skipped as `duplicates` whose original is
    now in `measured` (each gets the original's cost in `measured` too): the original's
    cost (or an error of kind `duplicate` when it failed) and `duplicate_of`, the
    original's config. Configs already in `measured` are left out."""
    from .log import record_of
    from .measure import MeasureResult

    out: list[dict[str, Any]] = []
    for config, original in duplicates.items():
        if config in measured or original not in measured:
            continue
        cost = measured[original]
        if cost is None:
            result = MeasureResult(
                config, error=f"the same kernel as {original}, which failed",
                error_kind="duplicate",
            )  # fmt: skip
        else:
            result = MeasureResult(config, costs=(cost,))
        measured[config] = cost
        out.append({**record_of(task, result), "duplicate_of": original.to_json()})
    return out


class TaskScheduler:
    """Chooses the task to spend the next batch on (module docstring)."""

    def __init__(
        self,
        weights: Sequence[float],
        warmup: int = 1,
        window: int = 3,
        exploration: float = 0.05,
    ) -> None:
        if not weights:
            raise ValueError("a scheduler needs at least one task")
        self.weights = [float(w) for w in weights]
        self.warmup = warmup
        self.window = window
        self.exploration = exploration
        n = len(weights)
        self.rounds = [0] * n
        self.history: list[list[float]] = [[] for _ in range(n)]
        self.predicted: list[float | None] = [None] * n
        self.done = [False] * n

    def best(self, index: int) -> float | None:
        """The best cost seen for task `index` (None before a working measurement)."""
        h = self.history[index]
        return h[-1] if h and math.isfinite(h[-1]) else None

    def update(
        self, index: int, best_cost: float | None, predicted_best: float | None = None
    ) -> None:
        """Task `index` got a batch; `best_cost` is its best cost so far (None: no working
        config yet), `predicted_best` the caller's estimate of the best it can reach."""
        self.rounds[index] += 1
        prev = self.best(index)
        value = math.inf if best_cost is None else float(best_cost)
        if prev is not None:
            value = min(value, prev)
        self.history[index].append(value)
        self.predicted[index] = predicted_best

    def mark_done(self, index: int) -> None:
        """Task `index` has nothing left to try (its space is measured out)."""
        self.done[index] = True

    def gain(self, index: int) -> float:
        """Estimated time saved per model run by one more batch on task `index`."""
        best = self.best(index)
        if best is None:
            return 0.0
        predicted = self.predicted[index]
        if predicted is None:
            h = self.history[index]
            past = h[max(len(h) - 1 - self.window, 0)]
            steps = min(self.window, len(h) - 1)
            rate = (past - best) / past / steps if steps and math.isfinite(past) else 0.0
            rate = max(rate, self.exploration / (1 + self.rounds[index]))
            predicted = best * (1.0 - rate)
        return self.weights[index] * max(best - predicted, 0.0)

    def next(self) -> int | None:
        """The task for the next batch, None when all are done."""
        open_ = [i for i in range(len(self.weights)) if not self.done[i]]
        if not open_:
            return None
        behind = [i for i in open_ if self.rounds[i] < self.warmup]
        if behind:
            return min(behind, key=lambda i: (self.rounds[i], i))
        return max(open_, key=lambda i: (self.gain(i), -self.rounds[i], -i))


__all__ = [
    "FeatureCache",
    "LoweringBudget",
    "TaskScheduler",
    "anneal",
    "duplicate_records",
    "kernel_digest",
    "propose",
    "training_data",
]
