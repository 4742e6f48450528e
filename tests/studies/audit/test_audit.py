"""Privacy audits (issue 21 item 3; issue 20 item 5; issue 24 items 2, 4, 7): bounds against closed forms,
every audit passes its calibrated instance and flags its broken control, the CLI answers bad input in one
line, and an audit's numbers do not depend on the other mechanisms of the command line."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.cli.audit import groups, resolve_names
from repro.errors import InvalidParameterError
from repro.fairness.private_postprocessing import guarantee as alg2_guarantee
from repro.learners.baselines import tran_2021a
from repro.learners.dp_sgd import guarantee as dp_sgd_guarantee
from repro.privacy.guarantee import Label, Neighbouring
from repro.privacy.strict_accountant import strict_epsilon
from repro.studies.audit import bounds as bd
from repro.studies.audit import mechanisms as mc
from repro.theory import expmech_learner, fairnr

EXPERIMENTS = Path(__file__).resolve().parents[3] / "experiments"

# ---------------------------------------------------------------------------- bounds


def test_clopper_pearson_and_epsilon_bound_closed_forms() -> None:
    assert bd.clopper_pearson_upper(0, 50, 0.05) == pytest.approx(1 - 0.05 ** (1 / 50))   # (1 − p)^n = α
    assert bd.clopper_pearson_upper(50, 50, 0.05) == 1.0
    with pytest.raises(InvalidParameterError, match="need 0 <= k <= n"):
        bd.clopper_pearson_upper(5, 3, 0.05)
    lb = bd.epsilon_lower_bound(100_000, 100_000, 1_000_000, 1_000_000, 0.0, 0.05)
    assert math.log(9) - 0.02 < lb < math.log(9)          # rates 0.1 / 0.1: ε ≥ ln 9 minus the slack
    assert bd.epsilon_lower_bound(50, 50, 100, 100, 0.0) == 0.0


def test_exact_epsilon_randomized_response() -> None:
    p = 0.2
    lp, lq = np.log([1 - p, p]), np.log([p, 1 - p])
    assert bd.exact_epsilon(lp, lq, 0.0) == pytest.approx(math.log((1 - p) / p), abs=1e-8)
    assert bd.exact_epsilon(lp, lq, 0.1) == pytest.approx(math.log((1 - p - 0.1) / p), abs=1e-6)


def test_gaussian_epsilon_matches_the_strict_accountant_at_q1_and_inverts() -> None:
    # strict at q = 1, one step, is one Gaussian mechanism with μ = 1/z
    for z, delta in ((1.0, 1e-5), (3.0, 1e-3)):
        assert bd.gaussian_epsilon(1 / z, delta) == pytest.approx(strict_epsilon(z, 1.0, 1, delta), rel=1e-6)
    mu = bd.gaussian_mu(1.0, 1e-3)
    assert bd.gaussian_epsilon(mu, 1e-3) == pytest.approx(1.0, rel=1e-8)
    assert bd.gaussian_delta(1.0, mu) == pytest.approx(1e-3, rel=1e-8)


def test_fitted_threshold_audit_is_valid_and_not_vacuous() -> None:
    """On exact Gaussian shifts the bound stays below the true ε in 20 of 20 seeds and reaches > 0.5×."""
    mu, delta = bd.gaussian_mu(1.0, 1e-3), 1e-3
    lbs = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        lbs.append(bd.threshold_audit(rng.standard_normal(20_000), mu + rng.standard_normal(20_000), delta,
                                      model="gaussian", select=0.2))
    assert max(lbs) <= 1.0 and np.median(lbs) > 0.4
    with pytest.raises(InvalidParameterError, match="model"):
        bd.threshold_audit(np.zeros(10), np.ones(10), 0.0, model="cauchy")


# ---------------------------------------------------------------------------- audits: claimed vs broken


@pytest.mark.slow
@pytest.mark.parametrize(("name", "runs", "floor"), [
    ("laplace-step", 20_000, 0.7), ("pfg-tree-mechanism", 6_000, 0.4), ("pfg-rank-noise", 40_000, 0.5),
    ("dp-sgd", 4_000, 0.2)])
def test_statistical_audit_passes_and_its_broken_control_is_flagged(name: str, runs: int, floor: float) -> None:
    ok = mc.MECHANISMS[name].run(runs, np.random.default_rng(1))
    assert ok.verdict == "no violation found" and ok.ratio > floor, ok
    assert ok.achievable_epsilon == pytest.approx(ok.claimed_epsilon, rel=0.1)   # calibrated: the claim is tight
    bad = mc.MECHANISMS[name].run(runs, np.random.default_rng(1), broken=True)
    assert bad.verdict == "control flagged" and bad.audited_epsilon > bad.claimed_epsilon * 1.1, bad


def test_the_pfg_policy_audit_composes_both_releases_and_flags_its_control() -> None:
    """One record moves the tree's and the rank releases: the achievable ε is the exact composition of the two
    Gaussian releases (below the basic-composition claim), the attack reaches most of it and never the claim,
    and halving σ and c is flagged."""
    from repro.studies.audit.bounds import gaussian_epsilon

    ok = mc.MECHANISMS["pfg-policy"].run(4_000, np.random.default_rng(1))
    assert ok.claimed_epsilon == 2.0 and ok.verdict == "no violation found", ok
    assert ok.achievable_epsilon < ok.claimed_epsilon and 0.5 * ok.achievable_epsilon < ok.audited_epsilon
    assert ok.audited_epsilon <= ok.achievable_epsilon * 1.1
    bad = mc.MECHANISMS["pfg-policy"].run(4_000, np.random.default_rng(1), broken=True)
    assert bad.verdict == "control flagged" and bad.audited_epsilon > bad.claimed_epsilon, bad
    # the achievable ε is the composition μ = √(μ_tree² + μ_rank²) of the two audits' own Gaussian shifts
    tree = mc.MECHANISMS["pfg-tree-mechanism"].run(10, np.random.default_rng(0))
    rank = mc.MECHANISMS["pfg-rank-noise"].run(10, np.random.default_rng(0))
    mus = [bd.gaussian_mu(r.achievable_epsilon, 1e-2) for r in (tree, rank)]
    assert ok.achievable_epsilon == pytest.approx(gaussian_epsilon(float(np.hypot(*mus)), 2e-2), rel=1e-6)


def test_ldp_audits_are_exact_and_the_wrong_budget_is_flagged() -> None:
    for name in mc.GROUPS["ldp"]:
        ok = mc.MECHANISMS[name].run(2_000, np.random.default_rng(4))
        assert ok.method == "exact" and "follows" in ok.note and ok.audited_epsilon <= 1.0 + 1e-9
        bad = mc.MECHANISMS[name].run(2_000, np.random.default_rng(4), broken=True)
        assert bad.verdict == "control flagged"
    assert mc.MECHANISMS["ldp-grr"].run(500, np.random.default_rng(0)).audited_epsilon == pytest.approx(1.0)
    assert not mc.sampler_check(np.zeros(500, dtype=int), np.array([0.5, 0.5]), 0.05)


#: runs per side of the strict-all control (achievable ε 2.30). Evidence for this count (the claimed
#: instance keeps the full profile's 30,000, which its ratio > 0.5 needs): the control's audited ε at
#: 20,000 runs per side, generator seeds 2 (the test's) / 0 / 1 / 3 / 4 / 5: 1.758 / 1.552 / 1.352 / 1.518 /
#: 1.685 / 1.591, all flagged and all above the asserted 1.2 (smallest margin 0.15, seed 1; the test's seed
#: 0.56). Saves a third of the test's trainer runs.
STRICT_ALL_CONTROL_RUNS = 20_000


@pytest.mark.slow
def test_strict_all_flags_too_little_noise() -> None:
    """Issue 21 item 3: the strict-all control (z/2) was NOT flagged (0.66 against 1.0: only the final iterate
    at q = 1/3 was observed); at q = 1 with every iterate observed it is flagged, and the claimed instance
    reaches about 0.6× its claim (full-profile runs)."""
    bad = mc.audit_dp_fermi_strict_all(STRICT_ALL_CONTROL_RUNS, np.random.default_rng(2), broken=True)
    assert bad.verdict == "control flagged" and bad.audited_epsilon > 1.2 * bad.claimed_epsilon, bad
    runs = mc.MECHANISMS["dp-fermi-strict-all"].runs["full"]
    ok = mc.audit_dp_fermi_strict_all(runs, np.random.default_rng(2))
    assert ok.verdict == "no violation found" and ok.ratio > 0.5, ok       # full profile (seed 0): 0.76
    assert ok.achievable_epsilon == pytest.approx(1.0, rel=1e-2)         # q = 1: the PLD claim is exact


@pytest.mark.parametrize("engine_case", ["strict", "strict-all"])
def test_fermi_audit_runs_through_the_compiled_unit_equal_the_reference_engine(engine_case: str,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: the DP-FERMI audits train their runs with the compiled learner unit, in chunks. Every iterate
    the attacker sees equals the numpy reference engine's (1e-9, summation order only; chunks of 7 so that a
    partial chunk is covered), rejected inits included, and the shared generator ends in the same state."""
    monkeypatch.setattr(mc, "AUDIT_CHUNK", 7)
    if engine_case == "strict":
        cfg = mc.STRICT_SENSITIVE.with_(lam=0.01, batch_size=10, epochs=1, w_init="normal", noise_multiplier=1.0)
        X, y, s = mc._fermi_canary_data(40, 3, mc.STRICT_X)
    else:
        cfg = mc.STRICT_ALL_FEATURES.with_(lam=0.01, batch_size=100, epochs=2, noise_multiplier=1.0)
        X, y, s = np.zeros((99, 1)), np.arange(99) % 2, (np.arange(99) // 2) % 2

    def accept(r: np.random.Generator) -> bool:          # rejects about half of the candidate inits
        return bool(r.uniform() < 0.5)

    gens = {e: np.random.default_rng(11) for e in ("numpy", "compiled")}
    got = {e: list(mc._fermi_iterates(X, y, s, cfg, 20, g, accept, engine=e)) for e, g in gens.items()}
    assert len(got["numpy"]) == len(got["compiled"]) == 20
    for ref, run in zip(got["numpy"], got["compiled"], strict=True):
        for a, b in zip(ref, run, strict=True):
            assert a.shape == b.shape
            np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    assert gens["numpy"].bit_generator.state == gens["compiled"].bit_generator.state
    with pytest.raises(InvalidParameterError, match="engine must be"):
        next(mc._fermi_iterates(X, y, s, cfg, 1, gens["numpy"], accept, engine="torch"))


@pytest.mark.parametrize("audit", [mc.audit_dp_fermi_strict, mc.audit_dp_fermi_strict_all, mc.audit_dp_sgd])
def test_learner_audits_give_the_reference_engines_numbers(audit, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole audit (both neighbours, the control too) through the compiled units, in chunks (of 50 here,
    so that a partial chunk is covered): the reference engine's audited ε, verdict and trade-off points."""
    monkeypatch.setattr(mc, "AUDIT_CHUNK", 50)
    for broken in (False, True):
        ref = audit(120, np.random.default_rng(8), broken=broken, engine="numpy")
        got = audit(120, np.random.default_rng(8), broken=broken)
        assert got.verdict == ref.verdict
        assert got.audited_epsilon == pytest.approx(ref.audited_epsilon, rel=1e-9, abs=1e-12)
        for field in ("alpha_hat", "beta_hat", "alpha_up", "beta_up"):
            np.testing.assert_allclose(getattr(got.tradeoff, field), getattr(ref.tradeoff, field), rtol=1e-9)
        assert (got.tradeoff.violated, got.tradeoff.audited_at_best) == (ref.tradeoff.violated,
                                                                         ref.tradeoff.audited_at_best)


def test_strict_oracle_bound_is_the_gaussian_limit_at_q1_and_vanishes_at_small_q() -> None:
    """The oracle bound never exceeds the exact ε; at q = 1 (one Gaussian) it comes close, at q = 1/20 with
    6,000 runs per side even the exact privacy loss certifies (almost) nothing."""
    z = 1 / bd.gaussian_mu(1.0, 1e-3)
    at_q1 = mc.strict_oracle_bound(z, 1.0, 1, 1e-3, 50_000, np.random.default_rng(0))
    assert 0.7 < at_q1 <= 1.0
    small = mc.strict_oracle_bound(3.704, 0.05, 20, 1 / 1600, 6_000, np.random.default_rng(0))
    assert small <= strict_epsilon(3.704, 0.05, 20, 1 / 1600) and small < 0.3


def test_exact_exponential_mechanism_audits_and_their_controls() -> None:
    for name in ("cummings-alg1-expmech", "fairnr-corrected-ftpl-step"):
        ok = mc.MECHANISMS[name].run(0, np.random.default_rng(0))
        assert ok.method == "exact" and 0 < ok.audited_epsilon <= ok.claimed_epsilon and ok.verdict == "no violation found"
        bad = mc.MECHANISMS[name].run(0, np.random.default_rng(0), broken=True)
        assert bad.verdict == "control flagged", bad
    step = mc.audit_fairnr_step(0, np.random.default_rng(0))
    assert "max score change / Δ = 1.000" in step.note          # the exact sensitivity check: Δ is attained
    # a 0/1-linear score moves by a spread ≤ Δ, so the exact ε is at most ε₀/2 (why achievable < claimed)
    assert "spread" in step.note and step.audited_epsilon <= step.claimed_epsilon / 2 + 1e-9
    alg1 = mc.audit_expmech(0, np.random.default_rng(0))
    assert "constructed: ε 0.318" in alg1.note and alg1.audited_epsilon == pytest.approx(0.318, abs=1e-3)


@pytest.mark.slow
def test_strict_flags_the_old_defect1_accounting_by_a_margin() -> None:
    """Regression (issue 14, defect 1): strict calibrated WITH amplification by subsampling is flagged by the
    profile rule (issue 38: at q = 1/4, T = 4, ε = 3 its empirical points lie below the exact accountant's
    trade-off curve; the one-point bound at δ = 1/n² alone would not flag it)."""
    old = mc.audit_dp_fermi_strict(STRICT_RUNS, np.random.default_rng(3), broken=True)
    assert old.verdict == "control flagged" and old.tradeoff is not None and old.tradeoff.violated, old
    assert old.achievable_epsilon > 1.5 * old.claimed_epsilon          # what the old accounting really spent
    fixed = mc.audit_dp_fermi_strict(50, np.random.default_rng(3))
    assert fixed.verdict == "no violation found" and fixed.achievable_epsilon == pytest.approx(3.0, rel=1e-3)
    assert fixed.profile is not None and fixed.profile.epsilon(fixed.delta) == pytest.approx(3.0, rel=1e-6)


@pytest.mark.parametrize("band", [mc.STRICT_F_BAND, None])
def test_strict_init_filter_makes_the_plain_draws_and_decisions(band: tuple[float, float] | None) -> None:
    """The strict audit's candidate test reads θ₀, b₀ from raw doubles: the same draws, values and decisions as
    drawing them with torch_linear_init (what the trainer draws), candidate by candidate."""
    from scipy.special import expit

    from repro.learners.logistic import torch_linear_init

    def plain(r: np.random.Generator) -> bool:
        th0, b0 = torch_linear_init(3, rng=r)
        W0 = r.standard_normal((3, 2))
        d0, d1 = W0[0, 1] - W0[0, 0], W0[1, 1] - W0[1, 0]
        f0 = float(expit(th0[0] * mc.STRICT_X + b0))
        in_band = band is None or band[0] <= f0 <= band[1]
        return bool(d0 * d1 < 0 and min(abs(d0), abs(d1)) > mc.W_GAP and in_band)

    fast = mc.strict_init_filter(mc.STRICT_X, band)
    a, b = np.random.default_rng(8), np.random.default_rng(8)
    kept = 0
    for _ in range(20_000):
        got = fast(a)
        assert got == plain(b) and a.bit_generator.state == b.bit_generator.state
        kept += got
    assert 100 < kept < 20_000 * (0.5 if band is None else 0.1)


#: the strict control's runs per side in the full profile
STRICT_RUNS = mc.MECHANISMS["dp-fermi-strict"].control_runs["full"]


def test_nominal_baselines_never_fail_and_verdicts() -> None:
    t = mc.audit_tran_2021a(200, np.random.default_rng(6))
    assert t.label is Label.NOMINAL and t.verdict in ("no violation found", "nominal: exceeded")
    assert math.isnan(t.achievable_epsilon) and t.claimed_epsilon == 2.0     # group privacy of the declared ε = 1
    beaten = mc.AuditResult("x", tran_2021a.guarantee(1.0, 0.0), 1.0, "", 2.0, 0.95, 10)
    assert beaten.verdict == "nominal: exceeded"
    assert mc.AuditResult("x", dp_sgd_guarantee(1.0, 0.0), 1.0, "", 2.0, 0.95, 10).verdict == "violated"
    assert mc.AuditResult("x", fairnr.guarantee("corrected", 1.0, 0.0), 1.0, "", 2.0, 0.95, 10).verdict == "violated"
    bad = mc.AuditResult("x", fairnr.guarantee("corrected", 1.0, 0.0), 1.0, "", 0.5, 0.95, 10, broken=True)
    assert bad.verdict == "CONTROL NOT FLAGGED"


def test_labels_come_from_the_declared_guarantees() -> None:
    """Issue 21 item 3: every audited claim is the mechanism's own declared guarantee (its label and ε), and
    the verdict helpers compare Label members (the text read back from audit.csv included)."""
    assert mc.audit_laplace_step(50, np.random.default_rng(0)).label is alg2_guarantee(1.0, 1.0).label
    assert mc.audit_dp_fermi_strict(2, np.random.default_rng(0)).claim.relation is \
        Neighbouring.REPLACE_SENSITIVE_ATTRIBUTE
    assert mc.audit_expmech(0, np.random.default_rng(0)).claim == expmech_learner.guarantee(1.0, 64)
    assert mc.MECHANISMS["ldp-grr"].run(50, np.random.default_rng(0)).label is Label.ACCOUNTED
    assert mc.MECHANISMS["ldp-optimal-5.5.9"].run(50, np.random.default_rng(0)).label is Label.PUBLIC_STATISTICS
    assert mc.is_nominal("nominal") and not mc.is_nominal(Label.ACCOUNTED)
    assert mc.fails_when_violated("public-statistics caveat") and not mc.fails_when_violated(Label.NOMINAL)


# ---------------------------------------------------------------------------- the command


def test_names_resolve_all_groups_and_duplicates() -> None:
    every = list(mc.MECHANISMS)
    assert resolve_names(("all", "ldp"), every, mc.GROUPS) == every   # issue 24 item 4: no "unknown ['all']"
    assert resolve_names((), every, mc.GROUPS) == every
    assert resolve_names(("ldp-grr", "ldp", "laplace-step"), every, mc.GROUPS) == ["laplace-step", *mc.GROUPS["ldp"]]
    assert resolve_names(("dp-fermi",), every, mc.GROUPS) == list(mc.GROUPS["dp-fermi"])
    with pytest.raises(InvalidParameterError, match="unknown mechanism"):
        resolve_names(("nope",), every, mc.GROUPS)
    # the groups are the documented ones: a name prefix such as "dp" is not a group; a typo gets its match
    with pytest.raises(InvalidParameterError, match="unknown mechanism 'dp'"):
        resolve_names(("dp",), every, mc.GROUPS)
    with pytest.raises(InvalidParameterError, match="did you mean 'ldp-grr'"):
        resolve_names(("ldp-gr",), every, mc.GROUPS)
    # the command's groups (it may not import the study) are the study's
    assert groups(every) == {g: list(members) for g, members in mc.GROUPS.items()}


@pytest.mark.parametrize("args", [["--seed", "-1"], ["--out", ""], ["nope"], ["--out", "/proc/x"],
                                  ["--out", "FILE"], ["--out", "FILE/sub"]])
def test_bad_input_is_one_line_before_any_audit(tmp_path, monkeypatch, args) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(EXPERIMENTS))
    (tmp_path / "FILE").write_text("x")
    res = CliRunner().invoke(main, ["audit", "laplace-step", *args])
    assert res.exit_code in (1, 2), res.output
    assert "Traceback" not in res.output, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert not (tmp_path / "audit").exists() and not (tmp_path / "results").exists()
    assert sum("rror:" in ln for ln in res.output.splitlines()) == 1 and len([ln for ln in res.output.splitlines() if ln.strip()]) <= 3, res.output


@pytest.mark.slow
def test_audit_runs_through_the_runner_and_streams_do_not_depend_on_the_command_line(tmp_path, monkeypatch) -> None:
    """Issue 20: DP-SGD's audited ε changed with the other mechanisms named; now seeds are keyed by name."""
    monkeypatch.setenv("REPRO_EXPERIMENTS_DIR", str(EXPERIMENTS))
    a = CliRunner().invoke(main, ["audit", "laplace-step", "--out", str(tmp_path / "a")])
    b = CliRunner().invoke(main, ["audit", "ldp-grr", "laplace-step", "--out", str(tmp_path / "b")])
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output

    def laplace_rows(out: str) -> list[str]:
        return [ln for ln in out.splitlines() if ln.startswith("| laplace-step")]

    assert laplace_rows(a.output) == laplace_rows(b.output) and len(laplace_rows(a.output)) == 1
    assert "control flagged" not in laplace_rows(a.output)[0] or "flagged (" in laplace_rows(a.output)[0]
    table = next((tmp_path / "a" / "audit").glob("smoke*/tables/audit.csv"))
    header = table.read_text().splitlines()[0].split(",")
    assert header[:8] == ["result_id", "method", "setting", "repetition", "mechanism", "instance", "label",
                          "claimed_epsilon"]
    assert "achievable_epsilon" in header and "audited_epsilon" in header
    assert len(table.read_text().splitlines()) == 1 + 2                      # claimed and broken instance
    figs = list((tmp_path / "a" / "audit").glob("smoke*/audit.p*"))
    assert {f.suffix for f in figs} == {".png", ".pdf"}
    again = CliRunner().invoke(main, ["audit", "laplace-step", "--out", str(tmp_path / "a")])
    assert "(2 cached)" in again.output and laplace_rows(again.output) == laplace_rows(a.output)


def test_figure_is_paper_ready(tmp_path, monkeypatch) -> None:
    """Issue 24 item 7: every text ≥ 8 pt, one tick label per mechanism (no stacked labels), legend explains
    every marker kind."""
    import pandas as pd

    from repro.studies.audit import mechanism_audit as ma
    from repro.studies.audit import mechanism_audit_report as rep

    rows = []
    for name in mc.MECHANISMS:
        claim = (tran_2021a.guarantee if name in ("tran-2021a", "pf-ld") else dp_sgd_guarantee)(1.0, 1e-3)
        r = mc.AuditResult(name, claim, 1.0 if name[:3] != "tra" else math.nan, "x", 1.0, 0.95, 10)
        rows.append(ma.table_row(r, "claimed"))
        if mc.MECHANISMS[name].control:
            rows.append(ma.table_row(mc.AuditResult(name, claim, 2.0, "x", 1.9, 0.95, 10, broken=True), "broken"))

    class Bundle:
        profile = "full"

        def table(self, _name: str) -> pd.DataFrame:
            return pd.DataFrame(rows)

    captured = {}
    monkeypatch.setattr(rep, "save_figure", lambda fig, outdir, stem: captured.setdefault("fig", fig) and [])
    rep.plot(Bundle(), tmp_path)
    fig = captured["fig"]
    fig.canvas.draw()
    ax = fig.axes[0]
    texts = [t for t in fig.findobj(match=lambda o: hasattr(o, "get_fontsize") and hasattr(o, "get_text"))
             if t.get_text()]
    assert texts and min(t.get_fontsize() for t in texts) >= 8
    ticks = [t.get_text() for t in ax.get_yticklabels()]
    assert len(ticks) == len(mc.MECHANISMS) == len(set(ticks))
    legends = [*fig.legends, *(lg for sf in fig.subfigs for lg in sf.legends)]
    labels = [t.get_text() for t in legends[0].get_texts()]
    assert any("achievable" in s for s in labels) and any("broken control" in s for s in labels)
    assert any("nominal" in s for s in labels) and any("claimed" in s for s in labels)
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in ax.get_yticklabels()]
    assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
