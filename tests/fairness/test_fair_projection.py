"""FairProjection (repro.fairness.fair_projection): constraints, ADMM dual, KL/CE projections.

Spec: seed-003-thesis.md §6.4 (GroupFair.buildG, coreMP.admm_tf), §10 L8.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from repro.errors import InvalidParameterError
from repro.fairness import fair_projection as fp


def _instance(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Base probabilities correlated with the group (so the constraints bind), labels, groups."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    y = rng.integers(0, 2, n)
    s[:4], y[:4] = [0, 1, 0, 1], [0, 0, 1, 1]          # every (y, s) cell non-empty
    p1 = np.clip(0.15 + 0.5 * s * rng.random(n) + 0.3 * rng.random(n), 0.02, 0.98)
    return fp.smooth(np.column_stack([1 - p1, p1])), y, s


def _brute_force(P: np.ndarray, G: np.ndarray, divergence: str) -> np.ndarray:
    """Primal solve with SLSQP: min (1/n) Σ D(h_i‖P_i) s.t. (1/n) Σ G_iᵀh_i ≤ 0, rows on the simplex."""
    n, c, k = G.shape

    def objective(z: np.ndarray) -> float:
        h = z.reshape(n, c)
        if divergence == "kl":
            return float(np.sum(h * np.log(h / P)) / n)
        return float(np.sum(P * np.log(P / h)) / n)

    cons = [{"type": "eq", "fun": lambda z: z.reshape(n, c).sum(axis=1) - 1.0},
            {"type": "ineq", "fun": lambda z: -(G.reshape(n * c, k).T @ z) / n}]
    res = minimize(objective, P.ravel(), method="SLSQP", bounds=[(1e-9, 1.0)] * (n * c), constraints=cons,
                   options={"ftol": 1e-15, "maxiter": 2000})
    assert res.success, res.message
    return res.x.reshape(n, c)


@pytest.mark.parametrize("kind", ["sp", "meo"])
@pytest.mark.parametrize("divergence", ["kl", "ce"])
def test_admm_matches_brute_force_primal(kind: str, divergence: str) -> None:
    P, y, s = _instance(12, seed=3)
    G = fp.build_constraints(kind, 0.05, P, fp.one_hot(s), fp.group_marginals(y, s))
    res = fp.admm(G, P, divergence=divergence, reg=0.0, max_iter=5000, tol=1e-12)
    h = fp.predict_projected(P, G, res.lam, divergence)
    h_ref = _brute_force(P, G, divergence)
    assert np.abs(h - h_ref).max() < 1e-5
    assert res.lam.max() > 0.01, "the instance must make a constraint bind, else the test is vacuous"
    assert fp.constraint_violation(G, h) < 1e-8


def test_kl_dual_matches_direct_dual_maximisation() -> None:
    """KL dual: max_{λ≥0} −(1/n) Σ logsumexp(log P_i − G_iλ); ADMM's λ attains the same value."""
    P, y, s = _instance(40, seed=5)
    G = fp.build_constraints("sp", 0.02, P, fp.one_hot(s), fp.group_marginals(y, s))
    n, c, k = G.shape
    logp = np.log(P)

    def neg_dual(lam: np.ndarray) -> float:
        return float(logsumexp(logp - (G.reshape(n * c, k) @ lam).reshape(n, c), axis=1).mean())

    direct = minimize(neg_dual, np.zeros(k), method="L-BFGS-B", bounds=[(0, None)] * k,
                      options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 10000})
    res = fp.admm(G, P, divergence="kl", reg=0.0, max_iter=5000, tol=1e-12)
    assert neg_dual(res.lam) == pytest.approx(direct.fun, abs=1e-9)
    # Strong duality: the primal KL at the projected h equals the dual value.
    h = fp.project_kl(P, G, res.lam)
    assert float(np.sum(h * np.log(h / P)) / n) == pytest.approx(-direct.fun, abs=1e-7)


@pytest.mark.parametrize("kind", ["sp", "meo"])
@pytest.mark.parametrize("divergence", ["kl", "ce"])
def test_projection_satisfies_constraints_on_training_points(kind: str, divergence: str) -> None:
    P, y, s = _instance(400, seed=11)
    alpha = 0.02
    G = fp.build_constraints(kind, alpha, P, fp.one_hot(s), fp.group_marginals(y, s))
    before = fp.constraint_violation(G, P)
    assert before > 0.01, "the base model must violate the constraints for the test to mean anything"
    res = fp.admm(G, P, divergence=divergence, reg=0.0, max_iter=3000, tol=1e-11)
    h = fp.predict_projected(P, G, res.lam, divergence)
    assert fp.constraint_violation(G, h) < 1e-7
    # In the fairness metric's own terms: P(Ŷ=y|S=s) within (1 ± α) of P(Ŷ=y) (expected rates under h).
    if kind == "sp":
        overall = h.mean(axis=0)
        for g in (0, 1):
            rate = h[s == g].mean(axis=0)
            assert np.all(rate <= (1 + alpha) * overall + 1e-6)
            assert np.all(rate >= (1 - alpha) * overall - 1e-6)


def test_reference_regularisation_is_nearly_feasible() -> None:
    """With the reference's reg = 1/√n the dual is slightly regularised: small, bounded violation."""
    P, y, s = _instance(2000, seed=2)
    G = fp.build_constraints("sp", 0.05, P, fp.one_hot(s), fp.group_marginals(y, s))
    for div in fp.DIVERGENCES:
        res = fp.admm(G, P, divergence=div, max_iter=500)
        h = fp.predict_projected(P, G, res.lam, div)
        assert fp.constraint_violation(G, h) < 0.25 * fp.constraint_violation(G, P)


@pytest.mark.parametrize("divergence", ["kl", "ce"])
def test_loose_tolerance_returns_the_base_model(divergence: str) -> None:
    P, y, s = _instance(300, seed=7)
    G = fp.build_constraints("sp", 10.0, P, fp.one_hot(s), fp.group_marginals(y, s))
    assert fp.constraint_violation(G, P) < 0
    res = fp.admm(G, P, divergence=divergence, max_iter=500, tol=1e-12)
    assert np.abs(res.lam).max() < 1e-9
    np.testing.assert_allclose(fp.predict_projected(P, G, res.lam, divergence), P, atol=1e-9)


def test_ce_projection_matches_scipy_per_point() -> None:
    """project_ce solves min_h Σ P log(P/h) + wᵀh on the simplex (3 classes, arbitrary w)."""
    rng = np.random.default_rng(0)
    P = fp.smooth(rng.dirichlet(np.ones(3), size=6))
    G = rng.normal(size=(6, 3, 2))
    lam = np.array([0.7, 1.3])
    h = fp.project_ce(P, G, lam)
    w = G @ lam
    for i in range(6):
        res = minimize(lambda q, i=i: float(np.sum(P[i] * np.log(P[i] / q)) + w[i] @ q), P[i], method="SLSQP",
                       bounds=[(1e-9, 1)] * 3, constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1}],
                       options={"ftol": 1e-14})
        np.testing.assert_allclose(h[i], res.x, atol=1e-6)


def test_binary_kl_step_equals_fixed_point_iteration() -> None:
    """The binary Newton shortcut of the KL v-update solves the reference's fixed point."""
    rng = np.random.default_rng(1)
    a = rng.normal(scale=3.0, size=(50, 2))
    rr = 2.0 + 1 / np.sqrt(50)
    x = fp._kl_step(np.zeros((50, 2)), a, rr, 1e-13, 100)
    np.testing.assert_allclose(x, -(np.exp(x) / np.exp(x).sum(axis=1, keepdims=True) + a) / rr, atol=1e-12)


def test_constraint_matrix_entries_by_hand() -> None:
    """G for one point of group 0 with P(Y=1|x) = 0.8, α = 0.1 (hand-computed, both constraints)."""
    P = np.array([[0.2, 0.8], [0.6, 0.4]])
    s = np.array([0, 1])
    p_ys = np.array([[0.3, 0.2], [0.1, 0.4]])     # P(Y=y, S=s); P(S=0) = 0.4, P(Y=1) = 0.5
    G = fp.build_constraints("sp", 0.1, P, fp.one_hot(s), p_ys)
    assert G.shape == (2, 2, 8)
    # block y=0 upper, column s=0, point 0: 1/0.4 − 1.1; row y=1 of that block is zero.
    assert G[0, 0, 0] == pytest.approx(1 / 0.4 - 1.1)
    assert G[0, 1, 0] == 0.0
    # block y=0 lower, column s=1, point 0 (not in group 1): −0 + 0.9.
    assert G[0, 0, 3] == pytest.approx(0.9)
    Gm = fp.build_constraints("meo", 0.1, P, fp.one_hot(s), p_ys)
    # MEO block y=1 upper (columns 4,5), s=0, point 0: P(Y=1|x)·(1/P(Y=1,S=0) − 1.1/P(Y=1)).
    assert Gm[0, 1, 4] == pytest.approx(0.8 * (1 / 0.1 - 1.1 / 0.5))
    assert Gm[0, 1, 5] == pytest.approx(0.8 * (0 - 1.1 / 0.5))


def test_bad_inputs_raise() -> None:
    P = fp.smooth(np.array([[0.5, 0.5], [0.2, 0.8]]))
    with pytest.raises(InvalidParameterError, match="kind"):
        fp.build_constraints("eo", 0.1, P, fp.one_hot(np.array([0, 1])), np.full((2, 2), 0.25))
    with pytest.raises(InvalidParameterError, match="alpha"):
        fp.build_constraints("sp", -0.1, P, fp.one_hot(np.array([0, 1])), np.full((2, 2), 0.25))
    with pytest.raises(InvalidParameterError, match="divergence"):
        fp.admm(np.zeros((2, 2, 8)), P, divergence="tv")
    with pytest.raises(InvalidParameterError, match="cell"):
        fp.group_marginals(np.array([0, 0, 1]), np.array([0, 1, 0]))


def test_group_probabilities_from_an_auxiliary_model() -> None:
    """MEO accepts P(S|x, Y=y) per label (n, c, g); with one-hot rows it equals the true-s matrix."""
    P, y, s = _instance(30, seed=4)
    p_ys = fp.group_marginals(y, s)
    oh = fp.one_hot(s)
    G_true = fp.build_constraints("meo", 0.1, P, oh, p_ys)
    G_aux = fp.build_constraints("meo", 0.1, P, np.stack([oh, oh], axis=1), p_ys)
    np.testing.assert_array_equal(G_true, G_aux)
    # Soft group probabilities move every constraint row linearly in P(S=s|x).
    soft = 0.5 * oh + 0.25
    G_soft = fp.build_constraints("sp", 0.1, P, soft, p_ys)
    G_hard = fp.build_constraints("sp", 0.1, P, oh, p_ys)
    p_s = p_ys.sum(axis=0)
    np.testing.assert_allclose(G_soft[:, 0, 0] - G_hard[:, 0, 0], (soft[:, 0] - oh[:, 0]) / p_s[0])
