"""Guarantees declared next to the code (issue 20 item 4) and the labelling gaps of issue 21."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from repro.privacy.guarantee import (
    NON_PRIVATE,
    STANDARDISED_FEATURES,
    Guarantee,
    Label,
    Neighbouring,
    compose,
)

STUDIES = Path(__file__).resolve().parents[2] / "repro" / "studies"
#: a label used as a mapping value or a literal label string assigned to an ε label field
_LABEL_VALUE = re.compile(
    r"""(:\s*|=\s*)(ACCOUNTED|NOMINAL|PUBLIC_STATISTICS|Label\.[A-Z_]+|["'](accounted|nominal|public-statistics caveat)["'])""")
_TABLE_NAME = re.compile(r"\b_?EPS_LABELS?\b\s*=")


def test_no_study_keeps_a_label_table() -> None:
    """Studies read each mechanism's declared guarantee; none maps methods to labels itself (dicts of labels,
    a literal label string, or an EPS_LABEL(S) table). Fails on the code before issue 20 item 4."""
    offenders = []
    for path in sorted(STUDIES.rglob("*.py")):
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            code = line.split("#", 1)[0]
            if _LABEL_VALUE.search(code) or _TABLE_NAME.search(code):
                offenders.append(f"{path.relative_to(STUDIES)}:{no}: {line.strip()}")
    assert not offenders, "label tables in studies (declare a Guarantee next to the mechanism):\n" + "\n".join(offenders)


def test_the_grep_catches_a_table() -> None:
    assert _LABEL_VALUE.search('EPS = {"a": ACCOUNTED, "b": NOMINAL}')
    assert _LABEL_VALUE.search('"eps_label": "nominal",')
    assert _LABEL_VALUE.search("label=Label.ACCOUNTED")
    assert _LABEL_VALUE.search("{'corrected': 'accounted', 'paper': 'nominal'}.get(mode)")
    assert _TABLE_NAME.search("_EPS_LABELS = {")
    assert not _LABEL_VALUE.search('"eps_label": declared.label.value,')


def test_declarations() -> None:
    from repro.fairness.private_postprocessing import guarantee as alg2
    from repro.learners.baselines import jagielski_2019, pf_ld, tran_2021a
    from repro.learners.dp_fermi import REFERENCE, STRICT_ALL_FEATURES, STRICT_SENSITIVE
    from repro.learners.dp_fermi import guarantee as fermi
    from repro.learners.dp_sgd import guarantee as dp_sgd
    from repro.privacy import ldp_mechanisms, tree_mechanism
    from repro.theory import expmech_learner, fairnr

    cases = {
        "dp-sgd": (dp_sgd(1.0, 1e-5), Label.PUBLIC_STATISTICS, Neighbouring.ADD_OR_REMOVE_ONE),
        "algorithm 2": (alg2(0.05, 0.1), Label.PUBLIC_STATISTICS, Neighbouring.ADD_OR_REMOVE_ONE),
        "reference": (fermi(REFERENCE, 1.0, 1e-5), Label.NOMINAL, Neighbouring.REPLACE_SENSITIVE_ATTRIBUTE),
        "strict": (fermi(STRICT_SENSITIVE, 1.0, 1e-5), Label.PUBLIC_STATISTICS,
                   Neighbouring.REPLACE_SENSITIVE_ATTRIBUTE),
        "strict-all": (fermi(STRICT_ALL_FEATURES, 1.0, 1e-5), Label.PUBLIC_STATISTICS, Neighbouring.ADD_OR_REMOVE_ONE),
        "tran": (tran_2021a.guarantee(1.0, 1e-5), Label.NOMINAL, Neighbouring.ADD_OR_REMOVE_ONE),
        "pf-ld": (pf_ld.guarantee(1.0, 1e-5), Label.NOMINAL, Neighbouring.ADD_OR_REMOVE_ONE),
        "jagielski": (jagielski_2019.guarantee(1.0, 1e-5), Label.PUBLIC_STATISTICS, Neighbouring.ADD_OR_REMOVE_ONE),
        "fairnr corrected": (fairnr.guarantee("corrected", 0.5, 1e-6), Label.ACCOUNTED, Neighbouring.REPLACE_ONE),
        "fairnr paper": (fairnr.guarantee("paper", 0.5, 1e-6), Label.NOMINAL, Neighbouring.REPLACE_ONE),
        "ldp": (ldp_mechanisms.guarantee(1.0), Label.ACCOUNTED, Neighbouring.LOCAL),
        "ldp opt": (ldp_mechanisms.guarantee(1.0, statistics="the full data's group/label distribution"),
                    Label.PUBLIC_STATISTICS, Neighbouring.LOCAL),
        "pfg tree": (tree_mechanism.guarantee(1.0, 1e-5), Label.PUBLIC_STATISTICS, Neighbouring.REPLACE_ONE),
        "algorithm 1": (expmech_learner.guarantee(1.0, 100), Label.ACCOUNTED, Neighbouring.REPLACE_ONE),
    }
    for name, (g, label, relation) in cases.items():
        assert isinstance(g, Guarantee) and g.label is label and g.relation is relation, name
        assert g.accountant, name
    for g in (cases["dp-sgd"][0], cases["strict"][0], cases["jagielski"][0]):
        assert STANDARDISED_FEATURES in g.caveat             # issue 21: standardisation statistics are public
    assert "L-tilde" in cases["pfg tree"][0].caveat
    assert cases["algorithm 1"][0].epsilon == 2.0 and cases["algorithm 1"][0].delta == pytest.approx(math.exp(-10))
    assert fairnr.guarantee("nonprivate", 1.0, 1e-6) is NON_PRIVATE


def test_compose_adds_and_keeps_the_weakest_label() -> None:
    a = Guarantee(1.0, 1e-6, Label.ACCOUNTED, Neighbouring.ADD_OR_REMOVE_ONE, accountant="x")
    b = Guarantee(0.5, 0.0, Label.PUBLIC_STATISTICS, Neighbouring.ADD_OR_REMOVE_ONE, caveat="sizes", accountant="y")
    c = compose(a, b, NON_PRIVATE)
    assert (c.epsilon, c.delta, c.label, c.caveat, c.accountant) == (1.5, 1e-6, Label.PUBLIC_STATISTICS, "sizes",
                                                                      "x + y")
    assert compose(a, a).label is Label.ACCOUNTED and compose(NON_PRIVATE) is NON_PRIVATE
    n = Guarantee(1.0, 0.0, Label.NOMINAL, Neighbouring.ADD_OR_REMOVE_ONE, caveat="formula")
    assert compose(b, n).label is Label.NOMINAL
    with pytest.raises(ValueError, match="neighbouring"):
        compose(a, Guarantee(1.0, 0.0, Label.ACCOUNTED, Neighbouring.REPLACE_ONE))
