"""DP-SGD's learner unit (logistic regression, Opacus semantics): the one place that decides a run's (q, T),
noise multiplier, event and guarantee (from the mechanism's calibration in :mod:`repro.learners.dp_sgd`), its
budget-taking fit and a compiled batched fit (the contract: :mod:`repro.learners.unit`).

Spec: seed-003-thesis.md §2.7 steps 3–4 and §3.2 (per-sample clipping to C, N(0, (zC)²) on the clipped sum,
Poisson sampling, the sum divided by the expected batch size, plain SGD).

- :func:`event` is a configuration's ``dp_accounting`` event (T Poisson-subsampled Gaussians);
  :func:`configure` turns a budget (or a given noise multiplier) into a :class:`~repro.learners.unit.Configured`
  (the :class:`DPSGDConfig`, its schedule, its event and the guarantee, :func:`repro.learners.dp_sgd.guarantee`
  at the PLD ε of the noise used, add/remove one record); :func:`fit` trains one model at a budget.
- :func:`fit_many` trains one model per trial, each from its own generator, in one compiled program per
  shape (``lax.scan`` over the steps, ``lax.map`` over the trials). Randomness is drawn on the host in the
  order of the numpy reference :func:`repro.learners.dp_sgd.train_dp_sgd_logistic` (θ₀, then per step the
  Poisson batch and the noise), so a model equals the reference run of the same generator to summation
  order, and a trial's bytes do not depend on its companions. X's two-valued (one-hot) columns are stored
  as bytes and the batch rows rebuilt as the same doubles (:mod:`repro.learners.batch_rows`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from repro.errors import InvalidParameterError
from repro.learners import batch_rows, dp_sgd
from repro.learners._jax import float64, jax, jnp
from repro.learners.dp_sgd import DPSGDResult
from repro.learners.dp_sgd import guarantee as dp_sgd_guarantee
from repro.learners.logistic import LogisticModel, torch_linear_init
from repro.learners.unit import Configured, Unit, tiny_tabular
from repro.privacy.accounting import dp_sgd_event
from repro.privacy.accounting import epsilon as accounted_epsilon
from repro.privacy.guarantee import NON_PRIVATE
from repro.privacy.sampling import poisson_batch

__all__ = ["DPSGDConfig", "Configured", "DrawnTrial", "schedule", "event", "configure", "fit", "draw_trial", "fit_drawn",
           "fit_many", "train"]



@dataclass(frozen=True)
class DPSGDConfig:
    """Hyperparameters of one DP-SGD run (the thesis's C = 1.5, η = 0.01, B = 1024, 50 epochs)."""

    noise_multiplier: float = 0.0
    clip_norm: float = 1.5
    lr: float = 0.01
    batch_size: int = 1024
    epochs: int = 50
    sampling_rule: str = "opacus"

    def __post_init__(self) -> None:
        if not self.clip_norm > 0:
            raise InvalidParameterError(f"clip_norm must be > 0; got {self.clip_norm}. The thesis uses 1.5.")
        if self.noise_multiplier < 0:
            raise InvalidParameterError(f"noise_multiplier must be >= 0; got {self.noise_multiplier}.")
        if not self.lr > 0:
            raise InvalidParameterError(f"lr must be > 0; got {self.lr}.")


def schedule(config: DPSGDConfig, n: int) -> tuple[float, int]:
    """(q, T) of ``config`` on ``n`` rows (:func:`repro.learners.dp_sgd.schedule`): q = 1/⌈n/B⌉ (Opacus) or
    B/n, T = epochs·⌈n/B⌉."""
    return dp_sgd.schedule(n, config.batch_size, config.epochs, rule=config.sampling_rule)


def event(config: DPSGDConfig, n: int):
    """The run's ``dp_accounting`` event on ``n`` rows: T Poisson-subsampled Gaussians at (z, q); None without
    noise. Spec: seed-003 §3.2."""
    if config.noise_multiplier == 0:
        return None
    q, steps = schedule(config, n)
    return _event_at(config, config.noise_multiplier, q, steps)


def _event_at(config: DPSGDConfig, noise_multiplier: float, q: float, steps: int):
    """T Poisson-subsampled Gaussians at (z, q); None without noise."""
    return None if noise_multiplier == 0 else dp_sgd_event(noise_multiplier, q, steps)


def _sigma(config: DPSGDConfig) -> dict[str, float]:
    return {"sigma": dp_sgd.noise_std(config.noise_multiplier, config.clip_norm)}


def configure(*, n: int, epsilon: float | None, delta: float, noise_multiplier: float | None = None,
              **hyper) -> Configured:
    """Calibrate DP-SGD on ``n`` rows to (ε, δ): the smallest z whose :func:`event` meets it by the PLD
    accountant (:func:`repro.learners.dp_sgd.calibrate_noise`), or take ``noise_multiplier`` as given
    (``epsilon=None``). ε = ∞ gives no noise. The guarantee carries the PLD ε of the noise used.
    ``hyper``: the other :class:`DPSGDConfig` fields. Spec: seed-003 §3.2, §10 P4."""
    if (epsilon is None) == (noise_multiplier is None):
        raise InvalidParameterError("give exactly one of epsilon (calibrated) and noise_multiplier; "
                                    f"got epsilon={epsilon}, noise_multiplier={noise_multiplier}.")
    config = DPSGDConfig(**hyper)
    q, steps = schedule(config, n)
    if epsilon is not None:
        if not float(epsilon) > 0:
            raise InvalidParameterError(f"epsilon must be > 0 (math.inf for none); got {epsilon}.")
        noise_multiplier = dp_sgd.calibrate_noise(epsilon, delta, q, steps)
    config = DPSGDConfig(**{**hyper, "noise_multiplier": float(noise_multiplier)})
    ev = event(config, n)
    # the guarantee carries the ε the accountant gives for the noise used (≤ the target when calibrated)
    claim = NON_PRIVATE if ev is None else dp_sgd_guarantee(accounted_epsilon(ev, delta), delta)
    return Configured(config, claim, n, float(delta), steps, q, config.noise_multiplier, ev, sigma=_sigma(config),
                      accountant="PLD (dp_accounting), Poisson-subsampled Gaussian", event_of=event, sigma_of=_sigma,
                      schedule_of=schedule, event_at=_event_at)


def fit(X: np.ndarray, y: np.ndarray, s: np.ndarray | None = None, *, epsilon: float | None, delta: float,
        rng: np.random.Generator, noise_multiplier: float | None = None, **hyper) -> tuple[DPSGDResult, Configured]:
    """Train one DP-SGD model at the budget (ε, δ) (or at a given ``noise_multiplier``): :func:`configure` on
    these rows, then :func:`fit_many` of that one trial. DP-SGD does not read ``s`` (Algorithm 2 appends it to
    X itself)."""
    c = configure(n=int(np.shape(X)[0]), epsilon=epsilon, delta=delta, noise_multiplier=noise_multiplier, **hyper)
    return fit_many(X, y, [c.config], [rng])[0], c


@dataclass
class DrawnTrial:
    """One trial's inputs to the program: data, initial θ₀ (``arrays["w"]``, ``arrays["b"]``), host draws."""

    shape: tuple[int, int, int, int]        # (n, d, T, padded rows)
    data: dict[str, np.ndarray]
    arrays: dict[str, np.ndarray]
    config: DPSGDConfig
    q: float
    steps: int
    mean_batch: float
    rows: batch_rows.Runs = ()              # how X's rows are stored (:func:`repro.learners.batch_rows.compact`)


def draw_trial(X: np.ndarray, y: np.ndarray, config: DPSGDConfig, rng: np.random.Generator) -> DrawnTrial:
    """Everything the reference trainer draws, in its order: θ₀ (``nn.Linear``), then per step the Poisson
    batch and, with noise, the (d + 1) normals of std zC."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    if y.shape != (n,):
        raise InvalidParameterError(f"X and y must have n rows; got {X.shape}, {y.shape}.")
    q, steps = schedule(config, n)
    w0, b0 = torch_linear_init(d, rng=rng)
    sigma = dp_sgd.noise_std(config.noise_multiplier, config.clip_norm)
    batches, noise = [], []
    for _ in range(steps):
        batches.append(poisson_batch(n, q, rng=rng))
        if sigma > 0:
            noise.append(rng.normal(0.0, sigma, size=d + 1))
    idx, mask = batch_rows.padded(batches)           # rows: this trial's largest batch, so its bytes are its own
    rows = idx.shape[1]
    total = sum(b.size for b in batches)
    arrays = {"w": w0, "b": np.float64(b0), "idx": idx, "mask": mask,
              "noise": np.stack(noise) if sigma > 0 else np.zeros((steps, d + 1)),
              "clip": np.float64(config.clip_norm), "lr": np.float64(config.lr),
              "denom": np.float64(max(int(n * q), 1))}
    stored, runs = batch_rows.compact(X)
    data = {**stored, "y": y, "row_norm": np.sqrt(np.einsum("ij,ij->i", X, X) + 1.0)}
    return DrawnTrial((n, d, steps, rows), data, arrays, config, q, steps, total / steps, runs)


def _step(runs: batch_rows.Runs, data: dict, a: dict, carry, xs):
    """One step of the reference loop (:func:`repro.learners.dp_sgd.private_gradient` and the update)."""
    w, b = carry
    idx, mask, noise = xs
    XB, yB, rn = batch_rows.gather(data, idx, runs), data["y"][idx], data["row_norm"][idx]
    r = (jax.nn.sigmoid(XB @ w + b) - yB) * mask
    rc = r * jnp.minimum(1.0, a["clip"] / (jnp.abs(r) * rn + 1e-6))
    d = w.shape[0]
    gw = (XB.T @ rc + noise[:d]) / a["denom"]
    gb = (rc.sum() + noise[d]) / a["denom"]
    return (w - a["lr"] * gw, b - a["lr"] * gb), None


def _train_one(runs: batch_rows.Runs, data: dict, a: dict):
    (w, b), _ = jax.lax.scan(functools.partial(_step, runs, data, a), (a["w"], a["b"]),
                             (a["idx"], a["mask"], a["noise"]))
    return w, b


@functools.lru_cache(maxsize=16)
def _program(shared_data: bool, runs: batch_rows.Runs):
    one = functools.partial(_train_one, runs)
    if shared_data:
        return jax.jit(lambda data, a: jax.lax.map(lambda ai: one(data, ai), a))
    return jax.jit(lambda data, a: jax.lax.map(lambda da: one(*da), (data, a)))


def fit_many(X: np.ndarray | Sequence[np.ndarray], y: np.ndarray | Sequence[np.ndarray],
             configs: Sequence[DPSGDConfig], generators: Sequence[np.random.Generator]) -> list[DPSGDResult]:
    """Train one DP-SGD model per trial (``configs[i]`` with ``generators[i]``, on (X, y) or (X[i], y[i])).

    Each result equals :func:`repro.learners.dp_sgd.train_dp_sgd_logistic` of the same inputs and generator
    to floating-point summation order (float64), and is the same alone or in any batch. Spec: seed-003 §3.2.
    """
    configs, generators = list(configs), list(generators)
    if len(configs) != len(generators):
        raise InvalidParameterError(f"fit_many needs one generator per trial; got {len(configs)} trials and "
                                    f"{len(generators)} generators.")
    per_trial = not isinstance(X, np.ndarray)
    trials = [draw_trial(X[i] if per_trial else X, y[i] if per_trial else y, cfg, rng)
              for i, (cfg, rng) in enumerate(zip(configs, generators, strict=True))]
    if not per_trial:
        for tr in trials[1:]:
            tr.data = trials[0].data
    return fit_drawn(trials)


def fit_drawn(trials: Sequence[DrawnTrial]) -> list[DPSGDResult]:
    """Train trials already drawn by :func:`draw_trial` (what :func:`fit_many` does after drawing): trials of
    one shape run as one program (``lax.map``), on one copy of the data when they share it."""
    groups: dict[tuple[tuple[int, int, int, int], batch_rows.Runs], list[int]] = {}
    for i, tr in enumerate(trials):
        groups.setdefault((tr.shape, tr.rows), []).append(i)
    out: list[DPSGDResult | None] = [None] * len(trials)
    with float64():
        for members in groups.values():
            first = trials[members[0]]
            shared = all(trials[i].data is first.data for i in members)
            data = first.data if shared else {k: np.stack([trials[i].data[k] for i in members]) for k in first.data}
            stacked = {k: np.stack([trials[i].arrays[k] for i in members]) for k in first.arrays}
            w, b = (np.asarray(v) for v in _program(shared, first.rows)(data, stacked))
            for j, i in enumerate(members):
                tr = trials[i]
                out[i] = DPSGDResult(LogisticModel(w[j].copy(), float(b[j])), tr.config.noise_multiplier,
                                     tr.config.clip_norm, tr.q, tr.steps, tr.mean_batch)
    return out  # type: ignore[return-value]


def train(X: np.ndarray, y: np.ndarray, config: DPSGDConfig, *, rng: np.random.Generator) -> DPSGDResult:
    """One trial of :func:`fit_many`: the compiled counterpart of ``train_dp_sgd_logistic``."""
    return fit_many(X, y, [config], [rng])[0]


def _example(rng: np.random.Generator) -> tuple:
    X, y, s = tiny_tabular(rng)
    return X, y, s, dict(epsilon=1.0, delta=1e-3, batch_size=32, epochs=2, lr=0.1)


#: the unit's contract (:class:`repro.learners.unit.Unit`)
UNIT = Unit(name="DP-SGD (logistic)", event=event, configure=configure, fit=fit, fit_many=fit_many,
            fit_one=lambda X, y, s, c, rng: fit_many(X, y, [c.config], [rng])[0], example=_example)
