"""Rows stored compactly for the compiled learners' batch gathers: the exact doubles of ``X[idx]``, so the
DP-FERMI and DP-SGD programs give the same bytes as on X stored as is (issue 34; a storage change only)."""

from __future__ import annotations

import numpy as np
import pytest

from repro.learners import batch_rows, dp_fermi_compiled, dp_sgd_unit
from repro.learners._jax import float64, jax
from repro.learners.dp_fermi import REFERENCE, STRICT_ALL_FEATURES, STRICT_SENSITIVE, train_dp_fermi_batch
from repro.learners.dp_sgd_unit import DPSGDConfig


def _tabular(n: int = 400, seed: int = 0) -> np.ndarray:
    """Numeric columns between one-hot blocks (Adult's shape in small), a constant column, a two-valued
    column whose values are not 0/1, and a three-valued one."""
    rng = np.random.default_rng(seed)
    onehot = np.eye(4)[rng.integers(0, 4, n)]
    return np.column_stack([rng.standard_normal(n), onehot[:, :2], rng.standard_normal((n, 2)), onehot[:, 2:],
                            np.full(n, 0.7), np.where(rng.random(n) < 0.3, -1.25, 3.5),
                            rng.integers(0, 3, n).astype(float)])


def _gathered(arrays: dict, runs: batch_rows.Runs, idx: np.ndarray) -> np.ndarray:
    with float64():
        return np.asarray(jax.jit(lambda a, i: batch_rows.gather(a, i, runs))(arrays, idx))


def test_gathered_rows_are_the_bits_of_x_rows() -> None:
    X = _tabular()
    arrays, runs = batch_rows.compact(X)
    kinds = [kind for kind, _, _ in runs]
    assert kinds == [False, True, False, True, False]       # numeric, one-hot, numeric, one-hot + 2 two-valued, 3-valued
    assert arrays["Xc"].dtype == np.uint8 and arrays["Xc"].shape == (400, 6) and arrays["Xd"].shape == (400, 4)
    idx = np.random.default_rng(1).integers(0, 400, size=(3, 64)).astype(np.int32)
    for rows in idx:
        assert _gathered(arrays, runs, rows).tobytes() == X[rows].tobytes()


@pytest.mark.parametrize("case", ["no two-valued column", "only two-valued columns", "a negative zero"])
def test_storage_falls_back_or_covers_every_column(case: str) -> None:
    rng = np.random.default_rng(2)
    if case == "no two-valued column":
        X = rng.standard_normal((50, 3))
    elif case == "only two-valued columns":
        X = (rng.random((50, 3)) < 0.5).astype(float)
    else:  # −0.0 equals +0.0: a select could not tell which zero a row held, so X is stored as is
        X = (rng.random((50, 3)) < 0.5).astype(float)
        X[7, 1] = -0.0
    arrays, runs = batch_rows.compact(X)
    assert (runs == ()) == (case != "only two-valued columns")
    idx = rng.integers(0, 50, 20).astype(np.int32)
    assert _gathered(arrays, runs, idx).tobytes() == X[idx].tobytes()


def _stored_as_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_rows, "compact", lambda X: ({"X": np.ascontiguousarray(X, dtype=np.float64)}, ()))


FERMI = {
    "reference": REFERENCE.with_(batch_size=64, epochs=2, sigma_theta=0.3, sigma_w=0.2),
    "strict, EO": STRICT_SENSITIVE.with_(batch_size=64, epochs=2, noise_multiplier=1.1, fairness="eo"),
    "strict-all": STRICT_ALL_FEATURES.with_(batch_size=64, epochs=2, noise_multiplier=1.1),
}


@pytest.mark.parametrize("name", list(FERMI))
def test_dp_fermi_gives_the_bytes_of_x_stored_as_is(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    X = _tabular()
    s = np.random.default_rng(3).integers(0, 2, len(X))
    y = (X[:, 0] + s > 0.4).astype(np.int64)
    configs = [FERMI[name].with_(lam=lam) for lam in (0.0, 0.5, 2.0)]
    compact = dp_fermi_compiled.train_batch(X, y, s, configs, rng=np.random.default_rng(5))
    assert dp_fermi_compiled.plan_trial(X, y, s, configs).static.rows      # the compact storage is in use
    reference = train_dp_fermi_batch(X, y, s, configs, rng=np.random.default_rng(5))
    _stored_as_is(monkeypatch)
    assert dp_fermi_compiled.plan_trial(X, y, s, configs).static.rows == ()
    as_is = dp_fermi_compiled.train_batch(X, y, s, configs, rng=np.random.default_rng(5))
    for a, b, r in zip(as_is, compact, reference, strict=True):
        assert a.model.w.tobytes() == b.model.w.tobytes() and np.array_equal(a.model.b, b.model.b)
        assert all(wa.tobytes() == wb.tobytes() for wa, wb in zip(a.W, b.W, strict=True))
        np.testing.assert_allclose(b.model.w, r.model.w, rtol=1e-9, atol=1e-12)


def test_dp_sgd_gives_the_bytes_of_x_stored_as_is(monkeypatch: pytest.MonkeyPatch) -> None:
    X = _tabular()
    y = (X[:, 0] + X[:, 1] > 0.4).astype(np.int64)
    cfg = DPSGDConfig(noise_multiplier=1.0, clip_norm=1.0, batch_size=64, epochs=2, lr=0.1)
    assert dp_sgd_unit.draw_trial(X, y, cfg, np.random.default_rng(0)).rows
    compact = dp_sgd_unit.train(X, y, cfg, rng=np.random.default_rng(6))
    _stored_as_is(monkeypatch)
    as_is = dp_sgd_unit.train(X, y, cfg, rng=np.random.default_rng(6))
    assert compact.model.w.tobytes() == as_is.model.w.tobytes() and compact.model.b == as_is.model.b


def test_padded_batches_fill_a_fixed_size_index_list_and_mask() -> None:
    batches = [np.array([3, 1, 4]), np.array([], dtype=np.int64), np.arange(70)]
    idx, mask = batch_rows.padded(batches)
    assert idx.shape == mask.shape == (3, 128) and idx.dtype == np.int32
    assert idx[0, :3].tolist() == [3, 1, 4] and mask[0].sum() == 3 and mask[1].sum() == 0 and mask[2].sum() == 70
    assert not idx[0, 3:].any() and not mask[0, 3:].any()
    assert batch_rows.padded(batches, multiple=1)[0].shape == (3, 70)       # the largest batch, as is
    assert batch_rows.padded(batches[:1], at_least=100)[0].shape == (1, 128)
    assert batch_rows.padded([])[0].shape == (0, 64)
