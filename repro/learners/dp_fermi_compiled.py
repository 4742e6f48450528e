"""DP-FERMI's tabular engine compiled: every step of many models in one JAX program (``lax.scan`` over
the steps, ``vmap`` over the trials), with the numbers of the numpy reference engine.

Spec: seed-004-dpfermi.md §4.1 (Algorithm 1), §4.3–§4.4 (switches), §7.6 ("vectorise over seeds/λ").

The numpy engine :func:`repro.learners.dp_fermi.train_dp_fermi_batch` is the reference; this module runs
its semantics, switch for switch (``head``, ``ermi_form``, ``fairness``, ``eo_weighting``, ``theta_clip``
in all four modes, ``sampling`` in all three, ``return_iterate``), with four changes of form only:

- **Randomness is drawn on the host, from each trial's own generator, in the reference engine's order**
  (θ₀, W₀, the random iterate, then per step the batch rows, the θ noise, the W noise of each label part;
  :func:`draw_trial`). The compiled program is deterministic. So a trial's models equal the reference
  engine's run of the same generator up to floating-point summation order (float64: ≈ 1e-12 relative,
  tested to 1e-9), and a trial's numbers never depend on which other trials share its program.
- **A batch is a fixed-size row list with a mask** (shuffled epochs' last partial batch, Poisson batches of
  varying size, padded to a size fixed by the trial itself): a masked row adds exact zeros to every sum.
- **A label part is a row weight** (1 on the part's rows, 0 elsewhere) instead of a row subset.
- **X's two-valued (one-hot) columns are stored as bytes** (:mod:`repro.learners.batch_rows`); a batch's rows
  are rebuilt as the same doubles, so this changes no number.

:func:`fit_many` trains several trials, each a group of configurations sharing one generator (the λ models
of one DP-FERMI trial share batches and noise draws, as in the reference engine, and are one vectorised
axis of every step), as one program when their shapes agree: the trials are stacked and mapped
(``lax.map``), so a trial's bytes are the same alone, in any batch, under any ``--jobs``. (``vmap`` over
the trials would change the summation order with the batch; on a CPU it is not faster here, since the
step is arithmetic-bound: benchmarks/dpfermi_compiled.py.)
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from repro.errors import InvalidParameterError
from repro.learners import batch_rows
from repro.learners._jax import float64, jax, jnp
from repro.learners.dp_fermi import (
    DPFermiConfig,
    DPFermiResult,
    _batch_indices,
    _checked_inputs,
    _init_theta,
    _shared_config,
    noise_stds,
    schedule,
)
from repro.learners.logistic import LogisticModel, SoftmaxModel

__all__ = ["DrawnTrial", "Iterates", "TrialPlan", "draw_trial", "fit_drawn", "fit_many", "iterates", "plan_trial",
           "train_batch"]

@dataclass(frozen=True)
class _Static:
    """What the compiled program is specialised on (one program per distinct value)."""

    head: str
    form: str
    group: int
    mode: str
    eo: bool
    weighting: str
    projection: str
    n_labels: int          # label parts: 1 (DP) or the number of classes (EO)
    L: int                 # logits per model
    k: int                 # groups
    w_shape: tuple[int, int]
    draw_theta: bool
    draw_w: bool
    poisson: bool
    rows: batch_rows.Runs  # how X's rows are stored (:func:`repro.learners.batch_rows.compact`)


@dataclass
class DrawnTrial:
    """One trial's inputs to the program: data, per-model constants, initial state and host draws
    (:func:`draw_trial`)."""

    static: _Static
    shape: tuple[int, int, int, int, int]   # (n, d, G, T, rows of the largest batch)
    configs: list[DPFermiConfig]
    data: dict[str, np.ndarray]
    arrays: dict[str, np.ndarray]
    steps: int
    q: float | None


@dataclass(frozen=True)
class TrialPlan:
    """What every trial of one (data, configurations) shares: the checked inputs, the per-model constants and
    the program's structure (:func:`plan_trial`); :meth:`draw` adds one trial's draws."""

    static: _Static
    configs: list[DPFermiConfig]
    cfg: DPFermiConfig
    data: dict[str, np.ndarray]
    constants: dict[str, np.ndarray]
    n: int
    d: int
    q: float | None
    steps: int

    def draw(self, rng: np.random.Generator) -> DrawnTrial:
        """Draw from ``rng`` everything the reference engine would draw, in its order (θ₀, W₀, the random
        iterate, then per step the batch rows and the noise); nothing is trained."""
        st, cfg, n, d, steps = self.static, self.cfg, self.n, self.d, self.steps
        L, w_shape, G = st.L, st.w_shape, len(self.configs)
        Th, b = _init_theta(d, L, G, rng)
        W0 = [np.repeat((rng.standard_normal(w_shape) if cfg.w_init == "normal" else np.zeros(w_shape))[None], G,
                        axis=0) for _ in range(st.n_labels)]
        t_hat = int(rng.integers(1, steps + 1)) if cfg.return_iterate == "random" else steps
        batches, u, V = [], [], [[] for _ in range(st.n_labels)]
        for idx in _batch_indices(n, cfg, rng):
            batches.append(idx)
            if st.draw_theta:
                u.append(rng.standard_normal((d + 1) * L).reshape(d + 1, L))
            if st.draw_w:
                for v in V:
                    v.append(rng.standard_normal(w_shape))
        # a batch's row count is padded to a size that depends on this trial alone (Poisson batches: its
        # largest, rounded up to a multiple of batch_rows.PAD), so its program, and so its bytes, never depend on its
        # companions
        idx, mask = batch_rows.padded(batches, multiple=batch_rows.PAD if st.poisson else 1)
        rows = idx.shape[1]
        arrays = {
            **self.constants,
            "Th": Th, "b": b, "W": np.stack(W0), "idx": idx, "mask": mask, "t_hat": np.int32(t_hat),
            "u": np.stack(u) if st.draw_theta else np.zeros((steps, 0)),
            "V": np.stack([np.stack(v) for v in V], axis=1) if st.draw_w else np.zeros((steps, 0)),
        }
        return DrawnTrial(st, (n, d, G, steps, rows), self.configs, self.data, arrays, steps, self.q)


def plan_trial(X: np.ndarray, y: np.ndarray, s: np.ndarray, configs: Sequence[DPFermiConfig]) -> TrialPlan:
    """Check the inputs as the reference engine does and derive what its trials share (no draw). Every
    trial drawn from one plan trains on one copy of the data (one program for all of them)."""
    configs = list(configs)
    cfg = _shared_config(configs)
    X, yi, s, n_classes, labels, isp_of = _checked_inputs(X, y, s, cfg)
    isp = [isp_of[lab] for lab in labels]
    n, d = X.shape
    softmax_head = cfg.head == "softmax"
    L = n_classes if softmax_head else 1
    k = int(s.max()) + 1
    Y = np.eye(n_classes)[yi] if softmax_head else yi.astype(np.float64)[:, None]
    form, group, mode = cfg.ermi_form, cfg.code_group, cfg.theta_clip
    w_shape = (1, 1) if form == "code_1x1" else (k, n_classes)
    q, steps = schedule(cfg, n)
    th_std, w_std, draw_theta, draw_w = noise_stds(configs, isp, form, group)
    rows, runs = batch_rows.compact(X)
    static = _Static(cfg.head, form, group, mode, cfg.fairness == "eo", cfg.eo_weighting, cfg.w_projection,
                     len(labels), L, k, w_shape, draw_theta, draw_w, cfg.sampling == "poisson", runs)
    data = {**rows, "Y": Y, "s": s.astype(np.int32), "yi": yi.astype(np.int32)}
    constants = {
        "isp": np.stack(isp),
        "lam": np.array([c.lam for c in configs]), "clip": np.array([c.clip_norm for c in configs]),
        "radius": np.array([c.w_radius for c in configs], dtype=float),
        "lr_th": np.array([c.lr_theta for c in configs]), "lr_w": np.array([c.lr_w for c in configs]),
        "th_std": np.asarray(th_std, dtype=float), "w_std": np.stack(w_std),
        "denom": np.float64(max(int(n * q), 1) if q is not None else 0.0),
    }
    return TrialPlan(static, configs, cfg, data, constants, n, d, q, steps)


def draw_trial(X: np.ndarray, y: np.ndarray, s: np.ndarray, configs: Sequence[DPFermiConfig],
               rng: np.random.Generator) -> DrawnTrial:
    """Check the inputs and draw one trial: ``plan_trial(X, y, s, configs).draw(rng)``."""
    return plan_trial(X, y, s, configs).draw(rng)


# ------------------------------------------------------------------------------------------ the step
# Shapes inside one trial: f (m, G, l); W (G, a, c) per label part (``code_1x1``: (G, 1, 1)); coef (m, G, L);
# r (m,) row weights of a label part (mask × label indicator). Each function is the reference engine's
# function of the same name with a row weight in place of a row subset.

def _positive(f):
    return f[..., 1] if f.shape[-1] > 1 else f[..., 0]


def _psi_dz(f, s, W, isp, st: _Static):
    if st.form == "code_1x1":
        F = _positive(f)
        dF = F * (1 - F)
        w = W[:, 0, 0]
        ind = (s == st.group).astype(f.dtype)
        return ((dF * (-w * w)[None, :])[..., None],
                (dF * (2 * isp[st.group]) * ind[:, None] * w[None, :])[..., None])
    c_ns = -jnp.sum(W * W, axis=1)[None, :, :]
    c_se = 2 * isp[s][:, None, None] * jnp.transpose(W[:, s, :], (1, 0, 2))
    if st.head == "logistic":
        dF = (f[..., 0] * f[..., 1])[..., None]
        return dF * (c_ns[..., 1:] - c_ns[..., :1]), dF * (c_se[..., 1:] - c_se[..., :1])
    return (f * (c_ns - jnp.sum(f * c_ns, axis=2, keepdims=True)),
            f * (c_se - jnp.sum(f * c_se, axis=2, keepdims=True)))


def _w_grad_sum(a, f, s, W, isp, st: _Static):
    """Σ_i a_ig ∇_W ψ̂_i (a: (m, G) weights, zero off the label part's rows)."""
    if st.form == "code_1x1":
        aF = a * _positive(f)
        w = W[:, 0, 0]
        ind = (s == st.group).astype(f.dtype)
        out = -2 * w * aF.sum(axis=0) + 2 * isp[st.group] * (aF * ind[:, None]).sum(axis=0)
        return out[:, None, None]
    m, G, lab = f.shape
    af = a[:, :, None] * f
    onehot = (s[:, None] == jnp.arange(st.k)[None, :]).astype(f.dtype) * isp[s][:, None]
    sens = (onehot.T @ af.reshape(m, G * lab)).reshape(st.k, G, lab)
    return -2 * W * af.sum(axis=0)[:, None, :] + 2 * jnp.transpose(sens, (1, 0, 2))


def _w_grad_sqnorm(f, s, W, isp, st: _Static):
    if st.form == "code_1x1":
        F = _positive(f)
        w = W[:, 0, 0]
        return (-2 * w[None, :] * F + 2 * isp[st.group] * F * (s == st.group).astype(f.dtype)[:, None]) ** 2
    col_sq = jnp.sum(W * W, axis=1)
    Ws = jnp.transpose(W[:, s, :], (1, 0, 2))
    ii = isp[s][:, None, None]
    return 4 * jnp.sum(f * f * (col_sq[None, :, :] - 2 * ii * Ws + ii**2), axis=2)


def _project(W, kind: str, radius):
    if kind == "box":
        return jnp.clip(W, -radius[:, None, None], radius[:, None, None])
    norm = jnp.sqrt(jnp.sum(W * W, axis=(1, 2)))
    scale = jnp.where(norm > radius, radius / jnp.maximum(norm, 1e-300), 1.0)
    return W * scale[:, None, None]


def _step(st: _Static, data: dict, a: dict, carry, xs):
    """One step of the reference engine's loop body for all G models of one trial."""
    Th, b, W, kept_th, kept_b = carry
    idx, mask, u, V, t = xs
    Y, s_all, y_all, isp = data["Y"], data["s"], data["yi"], a["isp"]
    lam, clip, radius, lr_th, lr_w = a["lam"], a["clip"], a["radius"], a["lr_th"], a["lr_w"]
    d, G, L = Th.shape
    XB, YB, sB, yB = batch_rows.gather(data, idx, st.rows), Y[idx], s_all[idx], y_all[idx]
    m = jnp.sum(mask)
    Z = jnp.einsum("md,dgl->mgl", XB, Th) + b[None]
    if st.head == "softmax":
        f = jax.nn.softmax(Z, axis=2)
        coef = f - YB[:, None, :]
    else:
        F = jax.nn.sigmoid(Z[..., 0])
        f = F[..., None] if st.form == "code_1x1" else jnp.stack([1 - F, F], axis=2)
        coef = (F - YB)[..., None]
    coef = coef * mask[:, None, None]
    sens = jnp.zeros_like(coef) if st.mode == "sensitive" else None
    parts = []
    for j in range(st.n_labels):
        r = mask * (yB == j).astype(mask.dtype) if st.eo else mask
        count = jnp.sum(r)
        parts.append((r, count))
        ns, se = _psi_dz(f, sB, W[j], isp[j], st)
        weight = m / jnp.maximum(count, 1.0) if (st.eo and st.weighting == "sum") else 1.0
        rr = r[:, None, None]
        if st.mode == "sensitive":
            coef = coef + rr * lam[None, :, None] * ns
            sens = sens + rr * se
        else:
            coef = coef + rr * (lam * weight)[None, :, None] * (ns + se)
    newW = []
    if st.mode in ("per_sample", "sensitive"):
        denom = a["denom"] if st.poisson else jnp.maximum(m, 1.0)
        row_norm = jnp.sqrt(jnp.einsum("ij,ij->i", XB, XB) + 1.0)[:, None]
        if st.mode == "per_sample":
            gn2 = jnp.sum(coef * coef, axis=2) * row_norm**2
            for j, (r, _) in enumerate(parts):
                gn2 = gn2 + r[:, None] * _w_grad_sqnorm(f, sB, W[j], isp[j], st)
            w_coef = jnp.minimum(1.0, clip[None, :] / (jnp.sqrt(gn2) + 1e-6))
            coef = coef * w_coef[..., None]
        else:
            sens_norm = jnp.sqrt(jnp.sum(sens * sens, axis=2)) * row_norm
            sens_clip = jnp.minimum(1.0, clip[None, :] / (sens_norm + 1e-12))
            coef = coef + lam[None, :, None] * sens * sens_clip[..., None]
            w_coef = jnp.ones_like(coef[..., 0])
        gw, gb = jnp.einsum("md,mgl->dgl", XB, coef), coef.sum(axis=0)
        if st.draw_theta:
            gw = gw + u[:d, None, :] * a["th_std"][None, :, None]
            gb = gb + u[d][None, :] * a["th_std"][:, None]
        Th = Th - (lr_th / denom)[None, :, None] * gw
        b = b - (lr_th / denom)[:, None] * gb
        for j, (r, _) in enumerate(parts):
            gW = _w_grad_sum(w_coef * r[:, None], f, sB, W[j], isp[j], st)
            if st.draw_w:
                gW = gW + V[j][None] * a["w_std"][j][:, None, None]
            newW.append(_project(W[j] + (lr_w / denom)[:, None, None] * gW, st.projection, radius))
    else:
        mm = jnp.maximum(m, 1.0)
        gw, gb = jnp.einsum("md,mgl->dgl", XB, coef) / mm, coef.sum(axis=0) / mm
        if st.mode == "batch":
            norm = jnp.sqrt(jnp.sum(gw * gw, axis=(0, 2)) + jnp.sum(gb * gb, axis=1))
            div = jnp.maximum(1.0, norm / clip)
            gw, gb = gw / div[None, :, None], gb / div[:, None]
        if st.draw_theta:
            gw = gw + u[:d, None, :] * a["th_std"][None, :, None]
            gb = gb + u[d][None, :] * a["th_std"][:, None]
        Th = Th - lr_th[None, :, None] * gw
        b = b - lr_th[:, None] * gb
        for j, (r, count) in enumerate(parts):
            m_lab = mm if (not st.eo or st.weighting == "label_prior") else jnp.maximum(count, 1.0)
            ones = jnp.broadcast_to(r[:, None], (r.shape[0], G))
            gW = lam[:, None, None] * _w_grad_sum(ones, f, sB, W[j], isp[j], st) / m_lab
            if st.draw_w:
                gW = gW + V[j][None] * a["w_std"][j][:, None, None]
            newW.append(_project(W[j] + lr_w[:, None, None] * gW, st.projection, radius))
    W = jnp.stack(newW)
    keep = t == a["t_hat"]
    kept_th = jnp.where(keep, Th, kept_th)
    kept_b = jnp.where(keep, b, kept_b)
    return (Th, b, W, kept_th, kept_b), None


def _train_one(st: _Static, trajectory: bool, data: dict, a: dict):
    """All steps of one trial: ``lax.scan`` of :func:`_step`; returns (kept Θ, kept b, final W), or with
    ``trajectory`` the iterates (Θ, b, W) after every step."""
    T = a["idx"].shape[0]
    carry = (a["Th"], a["b"], a["W"], a["Th"], a["b"])
    xs = (a["idx"], a["mask"], a["u"], a["V"], jnp.arange(1, T + 1, dtype=jnp.int32))
    step = functools.partial(_step, st, data, a)
    if trajectory:
        def body(c, x):
            c, _ = step(c, x)
            return c, c[:3]
        return jax.lax.scan(body, carry, xs)[1]
    (_, _, W, kept_th, kept_b), _ = jax.lax.scan(step, carry, xs)
    return kept_th, kept_b, W


@functools.lru_cache(maxsize=64)
def _program(st: _Static, shared_data: bool, trajectory: bool = False):
    """The compiled program of one static structure: :func:`_train_one` mapped over stacked trials
    (the data too, unless every trial of the program trains on the same arrays)."""
    one = functools.partial(_train_one, st, trajectory)
    if shared_data:
        return jax.jit(lambda data, a: jax.lax.map(lambda ai: one(data, ai), a))
    return jax.jit(lambda data, a: jax.lax.map(lambda da: one(*da), (data, a)))


def _results(trial: DrawnTrial, th: np.ndarray, b: np.ndarray, W: np.ndarray) -> list[DPFermiResult]:
    softmax_head = trial.static.head == "softmax"

    def model(g: int) -> LogisticModel | SoftmaxModel:
        if softmax_head:
            return SoftmaxModel(th[:, g, :].copy(), b[g].copy())
        return LogisticModel(th[:, g, 0].copy(), float(b[g, 0]))

    return [DPFermiResult(model(g), tuple(W[j, g].copy() for j in range(trial.static.n_labels)),
                          trial.steps, trial.q, c)
            for g, c in enumerate(trial.configs)]


def fit_many(X: np.ndarray | Sequence[np.ndarray], y: np.ndarray | Sequence[np.ndarray],
             s: np.ndarray | Sequence[np.ndarray], configs: Sequence[Sequence[DPFermiConfig]],
             generators: Sequence[np.random.Generator]) -> list[list[DPFermiResult]]:
    """Train many trials of DP-FERMI models at once; trial i is ``configs[i]`` (models that share batches
    and noise draws) with ``generators[i]``, on (X, y, s) or on (X[i], y[i], s[i]) when sequences are given.

    Returns one list of :class:`~repro.learners.dp_fermi.DPFermiResult` per trial, each equal (float64,
    summation order aside) to :func:`repro.learners.dp_fermi.train_dp_fermi_batch` of the same inputs and
    generator. Trials of equal shapes and structure run as one compiled program (``lax.map`` over the
    stacked trials: each trial runs the very step program it runs alone, so its bytes never depend on its
    companions); the others run as programs of their own. Spec: seed-004 §4.1, §4.4, §7.6.
    """
    configs = [list(c) for c in configs]
    generators = list(generators)
    if len(configs) != len(generators):
        raise InvalidParameterError(f"fit_many needs one generator per trial; got {len(configs)} trials and "
                                    f"{len(generators)} generators.")
    per_trial = not isinstance(X, np.ndarray)
    trials = []
    for i, (cfgs, rng) in enumerate(zip(configs, generators, strict=True)):
        data = (X[i], y[i], s[i]) if per_trial else (X, y, s)
        trials.append(draw_trial(*data, cfgs, rng))
    if not per_trial:  # one copy of the data for every trial
        for tr in trials[1:]:
            tr.data = trials[0].data
    return fit_drawn(trials)


def _run_drawn(trials: Sequence[DrawnTrial], trajectory: bool) -> list[tuple[np.ndarray, ...]]:
    """Per trial, the program's outputs as numpy arrays: trials of equal shapes and structure run as one
    program (``lax.map`` over the stacked trials), the others as programs of their own."""
    out: list[tuple[np.ndarray, ...] | None] = [None] * len(trials)
    batches: dict[Any, list[int]] = {}
    for i, tr in enumerate(trials):
        batches.setdefault((tr.static, tr.shape), []).append(i)
    with float64():
        for (st, _), members in batches.items():
            stacked = {key: np.stack([trials[i].arrays[key] for i in members]) for key in trials[members[0]].arrays}
            shared = all(trials[i].data is trials[members[0]].data for i in members)
            data = (trials[members[0]].data if shared else
                    {key: np.stack([trials[i].data[key] for i in members]) for key in trials[members[0]].data})
            got = [np.asarray(v) for v in _program(st, shared, trajectory)(data, stacked)]
            for j, i in enumerate(members):
                out[i] = tuple(v[j] for v in got)
    return out  # type: ignore[return-value]


def fit_drawn(trials: Sequence[DrawnTrial]) -> list[list[DPFermiResult]]:
    """Train trials already drawn by :func:`draw_trial` (what :func:`fit_many` does after drawing)."""
    return [_results(tr, *outs) for tr, outs in zip(trials, _run_drawn(trials, False), strict=True)]


@dataclass(frozen=True)
class Iterates:
    """Every iterate of one trial's models, the initial one first: Θ (T + 1, d, G, L), b (T + 1, G, L) and
    W (T + 1, label parts, G, a, c) — what the reference engine's ``on_step`` observer sees after each step."""

    theta: np.ndarray
    b: np.ndarray
    W: np.ndarray


def iterates(trials: Sequence[DrawnTrial]) -> list[Iterates]:
    """Train trials drawn by :func:`draw_trial` and return every iterate (for attacks that observe them all:
    the DP-FERMI audits of :mod:`repro.studies.audit.mechanisms`)."""
    out = []
    for tr, (th, b, W) in zip(trials, _run_drawn(trials, True), strict=True):
        a = tr.arrays
        out.append(Iterates(np.concatenate([a["Th"][None], th]), np.concatenate([a["b"][None], b]),
                            np.concatenate([a["W"][None], W])))
    return out


def train_batch(X: np.ndarray, y: np.ndarray, s: np.ndarray, configs: Sequence[DPFermiConfig], *,
                rng: np.random.Generator) -> list[DPFermiResult]:
    """One trial of :func:`fit_many`: the compiled counterpart of ``train_dp_fermi_batch``."""
    return fit_many(X, y, s, [list(configs)], [rng])[0]
