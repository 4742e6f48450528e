"""Every ``--set KEY=V`` example written in ``docs/`` and the README goes through the parser (issue #37 item 4).

The examples are read from the markdown, so a new example is covered without editing this test. An example on a
line that names experiment ids must be accepted by each named experiment that has the key; an example without an
id must be accepted by at least one experiment. "Accepted" means what ``repro run`` checks before any trial runs:
the key is settable, its values are typed and in their domain, and the plan has cells.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from repro.cli._common import parse_set
from repro.engine.spec import ExperimentSpec, load_all
from repro.errors import ReproError

ROOT = Path(__file__).resolve().parents[2]
SPECS = load_all(ROOT / "experiments", strict=True)
SET = re.compile(r"--set[ =]([A-Za-z_]\w*=[^\s`'\")|]+)")
ID = re.compile(r"\b[a-z]+(?:-[a-z0-9.]+)+\b")


def documented_examples() -> list[tuple[str, str, tuple[str, ...]]]:
    """(where, KEY=V text, ids named on the same line) of every ``--set`` example in the docs and README."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            ids = tuple(dict.fromkeys(i.rstrip(".") for i in ID.findall(line) if i.rstrip(".") in SPECS))
            for item in SET.findall(line):
                key, _, value = item.partition("=")
                if key.isupper() or "…" in value or "..." in value:   # placeholders: KEY=V, epochs=…
                    continue
                found.append((f"{path.name}:{number}", item.rstrip(".,;:"), ids))
    return found


def accepts(spec: ExperimentSpec, item: str) -> str:
    """'' when ``spec`` takes ``--set item`` under its smoke and full profiles, else the one-line error."""
    overrides = parse_set([item])
    for profile in ("smoke", "full"):
        key = next(iter(overrides))
        if key not in spec.settable_keys(profile):
            return f"{key} is not settable"
        try:
            typed = spec.coerce_overrides(overrides)
            spec.fixed_params(profile, typed)
            spec.expand_cells(profile, typed)
        except ReproError as exc:
            return str(exc)
    return ""


EXAMPLES = documented_examples()


def test_the_docs_have_set_examples() -> None:
    items = {item for _, item, _ in EXAMPLES}
    assert {"device=cpu", "data=clean", "epsilon=1,3"} <= items, items


@pytest.mark.parametrize(("where", "item", "ids"), EXAMPLES, ids=[f"{w} {i}" for w, i, _ in EXAMPLES])
def test_every_documented_set_example_is_accepted(where: str, item: str, ids: tuple[str, ...]) -> None:
    key = item.partition("=")[0]
    named = [SPECS[i] for i in ids if any(key in SPECS[i].settable_keys(p) for p in ("smoke", "full"))]
    if named:
        problems = {spec.id: accepts(spec, item) for spec in named}
        assert not any(problems.values()), f"{where}: --set {item}: {problems}"
    else:
        problems = {spec.id: accepts(spec, item) for spec in SPECS.values()}
        assert any(not p for p in problems.values()), f"{where}: --set {item} is accepted by no experiment"


@pytest.mark.parametrize("item", ["lambdas=10", "lambdas=0.0", "lambdas=[0]", "lambdas=0,10", "lambdas=[0,10]",
                                  "lambdas=released", "device=cpu", "device=auto"])
def test_dpfermi_fig_5_takes_what_its_docs_and_messages_offer(item: str) -> None:
    """Issue #37 item 4: `--set lambdas=10` (the study's own hint) and `--set device=cpu` (docs/dpfermi.md)."""
    assert accepts(SPECS["dpfermi-fig-5"], item) == ""


def test_dpfermi_fig_5_lambdas_are_typed_as_the_list_the_study_reads() -> None:
    spec = SPECS["dpfermi-fig-5"]
    for item, expected in (("lambdas=10", [10.0]), ("lambdas=[0]", [0.0]), ("lambdas=0,10", [0.0, 10.0]),
                           ("lambdas=released", "released")):
        typed = spec.coerce_overrides(parse_set([item]))
        assert spec.fixed_params("full", typed)["lambdas"] == expected, item
        assert spec.fixed_params("smoke", typed)["lambdas"] == expected, item


@pytest.mark.parametrize("item", ["lambdas=-1", "lambdas=abc", "device=quantum", "lambdas=nan"])
def test_dpfermi_fig_5_still_refuses_what_is_outside_the_domain(item: str) -> None:
    assert accepts(SPECS["dpfermi-fig-5"], item)
