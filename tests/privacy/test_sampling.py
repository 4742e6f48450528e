"""The law of the batch samplers (repro/privacy/sampling.py), and that it is the law the learners draw.

Poisson subsampling at rate q for T steps on n records is T·n independent Bernoulli(q) inclusions. The
checks below test that law with fixed seeds; each statistic is compared with its exact mean under the law
with a tolerance of 5 standard errors (two-sided normal tail 5.7·10⁻⁷; the batch-size variance by its
χ²(T − 1) quantiles at the same level), so a correct sampler fails with probability < 10⁻⁵ per seed and
check, while each of the five wrong samplers (2q, q/2, every row, fixed size, shuffled epochs) fails at
least one check by far more than the tolerance (``test_law_fails_on_each_wrong_sampler``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from repro.learners import dp_fermi, dp_sgd_unit
from repro.privacy import sampling

Sampler = Callable[[int, float, int, np.random.Generator], list[np.ndarray]]

#: the law tests' setting: the shipped rate q = 1/34 (n = 3,000 records, T = 340 steps: ten epochs)
N, Q, STEPS = 3_000, 1 / 34, 340
#: tolerance in standard errors of every mean check; the variance check uses χ² quantiles at the same level
Z = 5.0
TAIL = 2 * stats.norm.sf(Z)


def law_failures(batches: list[np.ndarray], n: int, q: float, steps: int) -> list[str]:
    """Names of the checks of the Poisson(q) law that ``batches`` (one index array per step) fails."""
    failed = []
    if len(batches) != steps:                                       # the number of steps
        return ["steps"]
    inc = np.zeros((steps, n), dtype=bool)
    for t, b in enumerate(batches):
        if np.unique(b).size != b.size or (b.size and (b.min() < 0 or b.max() >= n)):
            return ["indices"]
        inc[t, b] = True
    sizes = inc.sum(axis=1).astype(float)
    # per-record inclusion rate: n·T independent Bernoulli(q)
    if abs(inc.mean() - q) > Z * math.sqrt(q * (1 - q) / (n * steps)):
        failed.append("inclusion rate")
    # batch size: mean nq, variance nq(1 − q); the variance is the sum of the n records' variances only when
    # their inclusions are uncorrelated (independence across records)
    if abs(sizes.mean() - n * q) > Z * math.sqrt(n * q * (1 - q) / steps):
        failed.append("batch-size mean")
    chi = (steps - 1) * sizes.var(ddof=1) / (n * q * (1 - q))
    if not stats.chi2.ppf(TAIL / 2, steps - 1) <= chi <= stats.chi2.isf(TAIL / 2, steps - 1):
        failed.append("batch-size variance")
    # independence across steps, per record: each record's count over T steps is Bin(T, q); the dispersion
    # Σ_i (c_i − Tq)² / (Tq(1 − q)) has mean n and variance n(2 + (1 − 6q(1 − q))/(Tq(1 − q)))
    counts = inc.sum(axis=0)
    disp = float(np.sum((counts - steps * q) ** 2) / (steps * q * (1 - q)))
    if abs(disp - n) > Z * math.sqrt(2 * n + n * (1 - 6 * q * (1 - q)) / (steps * q * (1 - q))):
        failed.append("per-record dispersion")
    # independence across consecutive steps: Σ_t |B_t ∩ B_t+1| has mean (T − 1)nq², variance
    # (T − 1)nq²(1 − q²) + 2(T − 2)n(q³ − q⁴) (neighbouring overlaps share a step)
    overlap = float(np.sum(inc[1:] & inc[:-1]))
    var = (steps - 1) * n * q**2 * (1 - q**2) + 2 * (steps - 2) * n * (q**3 - q**4)
    if abs(overlap - (steps - 1) * n * q**2) > Z * math.sqrt(var):
        failed.append("overlap across steps")
    # independence across records by position: disjoint neighbour pairs (2i, 2i + 1) together in a batch,
    # (n/2)·T independent Bernoulli(q²)
    pairs = float(np.sum(inc[:, 0:n - 1:2] & inc[:, 1::2]))
    m = (n // 2) * steps
    if abs(pairs - m * q**2) > Z * math.sqrt(m * q**2 * (1 - q**2)):
        failed.append("neighbour pairs")
    return failed


def correct(n: int, q: float, steps: int, rng: np.random.Generator) -> list[np.ndarray]:
    return list(sampling.poisson_batches(n, q, steps, rng=rng))


def _shuffled(n: int, q: float, steps: int, rng: np.random.Generator) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    while len(out) < steps:
        out += sampling.shuffled_batches(n, round(n * q), rng=rng)
    return out[:steps]


#: the wrong samplers, and the checks each must fail (at least these)
WRONG: dict[str, tuple[Sampler, set[str]]] = {
    "2q": (lambda n, q, T, r: correct(n, 2 * q, T, r), {"inclusion rate", "batch-size mean"}),
    "q/2": (lambda n, q, T, r: correct(n, q / 2, T, r), {"inclusion rate", "batch-size mean"}),
    "every row": (lambda n, q, T, r: [np.arange(n) for _ in range(T)], {"inclusion rate", "batch-size variance"}),
    "fixed size": (lambda n, q, T, r: [sampling.fixed_size_batch(n, round(n * q), rng=r) for _ in range(T)],
                   {"batch-size variance"}),
    "shuffled epochs": (_shuffled, {"batch-size variance", "per-record dispersion", "overlap across steps"}),
}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_poisson_sampler_follows_the_law(seed: int) -> None:
    assert law_failures(correct(N, Q, STEPS, np.random.default_rng(seed)), N, Q, STEPS) == []


@pytest.mark.parametrize("name", list(WRONG))
def test_law_fails_on_each_wrong_sampler(name: str) -> None:
    draw, must_fail = WRONG[name]
    failed = set(law_failures(draw(N, Q, STEPS, np.random.default_rng(0)), N, Q, STEPS))
    assert must_fail <= failed, f"{name}: failed {sorted(failed)}, expected at least {sorted(must_fail)}"


def test_law_fails_on_a_wrong_number_of_steps() -> None:
    assert law_failures(correct(N, Q, STEPS - 1, np.random.default_rng(0)), N, Q, STEPS) == ["steps"]


def test_learners_draw_the_poisson_law_at_their_schedule() -> None:
    """DP-FERMI's batches (every engine, the CNN's included, reads ``_batch_indices``) and DP-SGD's unit draws
    follow the law at the (q, T) their schedule states, with T the number of steps drawn."""
    n = N
    cfg = dp_fermi.STRICT_ALL_FEATURES.with_(batch_size=88, epochs=10)
    q, steps = dp_fermi.schedule(cfg, n)
    assert (q, steps) == (1 / 35, 350)
    batches = list(dp_fermi._batch_indices(n, cfg, np.random.default_rng(5)))
    assert law_failures(batches, n, q, steps) == []
    dcfg = dp_sgd_unit.DPSGDConfig(noise_multiplier=0.0, batch_size=88, epochs=10)
    tr = dp_sgd_unit.draw_trial(np.zeros((n, 1)), np.zeros(n), dcfg, np.random.default_rng(6))
    drawn = [row[m] for row, m in zip(tr.arrays["idx"], tr.arrays["mask"].astype(bool), strict=True)]
    assert (tr.q, tr.steps) == (q, steps)
    assert law_failures(drawn, n, tr.q, tr.steps) == []


def test_samplers_make_the_draws_of_the_trainers_before_them() -> None:
    """Same draws in the same order as the inline code the trainers had (so their records are unchanged)."""
    a, b = np.random.default_rng(9), np.random.default_rng(9)
    np.testing.assert_array_equal(sampling.poisson_batch(500, 0.1, rng=a), np.flatnonzero(b.random(500) < 0.1))
    np.testing.assert_array_equal(sampling.fixed_size_batch(500, 30, rng=a), b.choice(500, size=30, replace=False))
    perm = b.permutation(500)
    got = sampling.shuffled_batches(500, 64, rng=a)
    assert [g.tolist() for g in got] == [perm[i:i + 64].tolist() for i in range(0, 500, 64)]
    assert a.random() == b.random()


def test_fixed_size_and_shuffled_schemes_keep_their_own_laws() -> None:
    rng = np.random.default_rng(11)
    fixed = [sampling.fixed_size_batch(200, 20, rng=rng) for _ in range(4000)]
    assert {f.size for f in fixed} == {20} and all(np.unique(f).size == 20 for f in fixed)
    counts = np.bincount(np.concatenate(fixed), minlength=200)
    # each record's count is Bin(4000, 0.1): mean 400, sd 19; the largest |deviation| of 200 within 5 sd
    assert np.max(np.abs(counts - 400)) < 5 * math.sqrt(4000 * 0.1 * 0.9)
    epoch = sampling.shuffled_batches(203, 50, rng=rng)
    assert [e.size for e in epoch] == [50, 50, 50, 50, 3]
    assert sorted(np.concatenate(epoch).tolist()) == list(range(203))
    assert sampling.fixed_size_batch(5, 9, rng=rng).size == 5


def test_the_sampler_grep_can_fail() -> None:
    import re

    pattern = re.compile(r"flatnonzero\(\s*\w+\.random\(|\.random\([^)]*\)\s*<\s*(2 \* )?q\b")
    assert pattern.search("idx = np.flatnonzero(rng.random(n) < q)")
    assert pattern.search("hit = r.random(m) < q")
    assert not pattern.search("keep = rng.random(n) < p") and not pattern.search("x = rng.random(3)")


def test_one_poisson_sampler_in_the_package() -> None:
    """No trainer, engine or estimator draws a Poisson batch by itself: the pattern of the sampler appears in
    repro/privacy/sampling.py only (the audits' oracles draw the claimed law on purpose, not a batch)."""
    import re
    from pathlib import Path

    import repro

    root = Path(repro.__file__).parent
    # a batch drawn from uniforms (np.flatnonzero(rng.random(n) < q)) or a rate named q compared with uniforms
    pattern = re.compile(r"flatnonzero\(\s*\w+\.random\(|\.random\([^)]*\)\s*<\s*(2 \* )?q\b")
    # the shipped audits' oracle ceiling draws the exact claimed law, independent of the code under test
    oracle = {"privacy/sampling.py", "studies/audit/subsampled.py"}
    found = [str(p.relative_to(root)) for p in root.rglob("*.py")
             if str(p.relative_to(root)) not in oracle and pattern.search(p.read_text(encoding="utf-8"))]
    assert found == [], found
    text = (root / "studies/audit/subsampled.py").read_text(encoding="utf-8")
    assert len(pattern.findall(text)) == 2 and "oracle" in text     # the two oracle draws, nothing else
