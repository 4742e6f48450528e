"""The README tells a newcomer what the headline run is expected to show (issue #15, item 12)."""

from __future__ import annotations

import re
from pathlib import Path

from repro.engine.runner import RunConfig, run_experiment
from repro.engine.spec import load_experiment

ROOT = Path(__file__).parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_says_which_headline_rows_fail_by_design() -> None:
    headline = README.split("<!-- headline-command -->", 1)[1].split("<!-- test-command -->", 1)[0]
    assert "Expect 12 `NO` rows" in headline and "erratum E-4" in headline


def test_readme_mirror_example_is_an_absolute_path() -> None:
    examples = re.findall(r"REPRO_DATA_MIRROR=(\S+?)`", README)
    assert examples and all(e.startswith("/") for e in examples)


def test_headline_experiment_explains_its_expected_failures_and_names_methods(tmp_path: Path) -> None:
    spec = load_experiment(ROOT / "experiments" / "compat-impossibility.toml")
    assert "erratum E-4" in spec.expected
    outcome = run_experiment(spec, RunConfig(out=tmp_path, use_cache=False))
    assert outcome.summary["method"].astype(str).str.len().min() > 0  # no empty method column
    not_within = outcome.summary["within"].eq(False).sum()
    assert str(int(not_within)) in spec.expected  # the count the line promises is the count we get


# ---------------------------------------------------------------- the front page and docs/ (issue #24, item 8)

DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)\s]+)\)")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "ARCHITECTURE.md", *sorted(DOCS.glob("*.md"))]


def known_ids() -> tuple[set[str], set[str]]:
    """(experiment ids, ids and aliases)."""
    from repro.engine.spec import load_all

    specs = load_all(ROOT / "experiments")
    return set(specs), set(specs) | {a for s in specs.values() for a in s.aliases}


def test_readme_is_a_short_front_page() -> None:
    """A researcher reads it in five minutes: no project bookkeeping (issue numbers, dated notes, sessions, CI
    internals), and the test command's duration in one sentence."""
    assert len(README.splitlines()) <= 130
    assert not re.search(r"\bissues? #?\d+", README, flags=re.I), "issue numbers belong in CHANGELOG.md"
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", README), "dated notes belong in CHANGELOG.md or benchmarks/"
    assert ".ci/" not in README and "session" not in README.lower()
    after = README.split("<!-- test-command -->", 1)[1].split("```", 2)[2].split("\n## ", 1)[0]
    assert len(re.findall(r"\bmin(?:utes?)?\b", after)) == 1, "the test command's duration: one sentence"


def test_readme_keeps_the_two_commands_first_then_the_status() -> None:
    """The install-and-run and test commands open the page, the status table follows; what changed for a
    returning user is in CHANGELOG.md, every release's notes kept (the compiled learners keep the tabular
    numbers, Figure 5's change, JAX a core dependency, cached trials rerun once; the release before: seeds and
    cache keys changed once, typed `--set` values)."""
    heads = re.findall(r"^## (.*)$", README, flags=re.M)
    assert heads[:2] == ["Two commands on a fresh machine", "Reproduction status"], heads
    assert "What changed" not in README and "(CHANGELOG.md)" in README
    log = " ".join((ROOT / "CHANGELOG.md").read_text(encoding="utf-8").split())
    assert "tabular numbers are unchanged" in log and "JAX is now a core dependency" in log
    assert "Figure 5" in log and "numbers change" in log
    assert "rerun once" in log  # cached trials are recomputed: say it where a returning user looks
    earlier = log.split("## Before 0.1.0", 1)[1]
    assert "Seeds and cache keys changed, once" in earlier and "not reused" in earlier
    assert "`--set` values are typed" in earlier and "`epsilon=1`, `1.0` and `1e0` are one trial" in earlier


def test_changelog_names_the_packaged_version() -> None:
    """Keep a Changelog form: one `## [X.Y.Z]` section per release, the newest first and equal to the version in
    pyproject.toml and `repro --version`."""
    import tomllib

    from repro import __version__

    log = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", log, flags=re.M)
    packaged = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert versions and versions[0] == packaged == __version__
    assert versions == sorted(versions, key=lambda v: tuple(map(int, v.split("."))), reverse=True)


def test_readme_shows_the_estimator_snippet_and_the_with_pointer() -> None:
    snippet = re.search(r"```python\n(.*?)```", README, flags=re.S)
    assert snippet and "from repro.estimators import DPFermiClassifier" in snippet.group(1)
    assert "fit(X, y, sensitive_features=s)" in snippet.group(1) and "privacy_guarantee_" in snippet.group(1)
    import numpy as np

    rng = np.random.default_rng(0)  # small data; the snippet runs as printed, with 2 epochs injected
    X = rng.normal(size=(300, 3))
    s = (rng.random(300) < 0.4).astype(int)
    namespace = {"X": X, "y": (X[:, 0] + s > 0.3).astype(int), "s": s, "X_test": X[:20]}
    exec(compile(snippet.group(1).replace("random_state=0)", "random_state=0, epochs=2)"), "README.md", "exec"),
         namespace)
    assert namespace["clf"].predict(X[:20]).shape == (20,)
    assert namespace["clf"].privacy_guarantee_.epsilon == 1.0
    assert re.search(r"repro run thesis-table-3\.1 --with\s+examples/my_method\.py", README)
    assert (ROOT / "examples" / "my_method.py").is_file()


def _broken_links(path: Path) -> list[str]:
    broken = []
    text = path.read_text(encoding="utf-8")
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        if not resolved.exists():
            broken.append(f"{path.name}: {target}")
        elif anchor and resolved.suffix == ".md":
            heads = {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                     for h in re.findall(r"^#+ (.*)$", resolved.read_text(encoding="utf-8"), flags=re.M)}
            if anchor not in heads:
                broken.append(f"{path.name}: {target} (no such heading)")
    return broken


def test_every_relative_link_resolves() -> None:
    """README.md, ARCHITECTURE.md and every page of docs/."""
    broken = [b for path in markdown_files() for b in _broken_links(path)]
    assert not broken, broken


def test_the_link_check_can_fail(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# A heading\n", encoding="utf-8")
    page.write_text("[ok](there.md) [ok](there.md#a-heading) [gone](missing.md) [bad](there.md#nope) "
                    "[web](https://example.org/x)\n", encoding="utf-8")
    assert _broken_links(page) == ["page.md: missing.md", "page.md: there.md#nope (no such heading)"]


def test_architecture_names_only_real_files() -> None:
    """Every `repro/...`-relative module path ARCHITECTURE.md names in backticks exists."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    names = set(re.findall(r"`((?:engine|studies|datasets|privacy|learners|fairness|estimators|cli)/[\w/.*]+\.py)", text))
    assert names
    missing = [n for n in sorted(names) if "*" not in n and not (ROOT / "repro" / n).is_file()]
    assert not missing, missing


def _expand(cell: str) -> list[str]:
    """Experiment ids of a status-table command cell: `ID` and shorthand suffixes (`-8`, `-alpha-eps`)."""
    tokens = re.findall(r"`([^`]+)`", cell)
    if not tokens:
        return []
    base = tokens[0].split()[0]
    stem = base.rsplit("-", 1)[0]
    return [base, *(stem + t for t in tokens[1:] if t.startswith("-"))]


def status_table_ids() -> list[str]:
    table = README.split("## Reproduction status", 1)[1].split("\n## ", 1)[0]
    ids = []
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 4 and not line.startswith("| Result"):
            ids += _expand(cells[1])
    return ids


def test_status_table_lists_every_experiment_and_only_real_ones() -> None:
    ids, names = known_ids()
    listed = status_table_ids()
    assert set(listed) <= names, sorted(set(listed) - names)
    aliases = _aliases()
    resolved = set(listed) & ids | {i for i in ids if any(a in listed for a in aliases[i])}
    assert ids <= resolved, f"missing from the README status table: {sorted(ids - resolved)}"


def _aliases() -> dict[str, tuple[str, ...]]:
    """Experiment id → its aliases (the experiment files read once, not once per id)."""
    from repro.engine.spec import load_all

    return {i: tuple(s.aliases) for i, s in load_all(ROOT / "experiments").items()}


def test_every_repro_command_in_the_readme_exists() -> None:
    from repro.cli import COMMANDS

    _, names = known_ids()
    takes_id = {"run", "show", "plot", "report"}
    commands = re.findall(r"\brepro ([a-z][\w-]*)((?: [^\s`&|;#]+)*)", README)
    assert commands
    for name, rest in commands:
        assert name in COMMANDS, f"`repro {name}` is not a command"
        tokens = rest.split()   # the ids come before the first option (`--from docs/results` is an option's value)
        args = tokens[:next((i for i, a in enumerate(tokens) if a.startswith("-")), len(tokens))]
        if name in takes_id and args and args[0] not in {"ID", "all", "…", "..."} and "=" not in args[0]:
            assert args[0] in names, f"`repro {name} {args[0]}`: no such experiment"


def test_cli_reference_is_generated_from_help() -> None:
    """In a fresh interpreter: click caches each command's help option from the first context it sees,
    so help texts rendered after other tests ran can differ from what a user sees."""
    import os
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "repro.cli.gen_docs", "--check"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
