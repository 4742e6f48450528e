"""Results on disk: ``results/<id>/<profile>[-<variant>]/``.

Files (columns documented in the README):

- ``trials.csv``: one row per trial record (result_id, method, setting, repetition, the cell's
  parameters, the metrics, seconds, cached).
- ``summary.csv``: one row per (method, setting, metric) with the leading columns
  ``result_id, method, setting, metric, n, mean, std, paper, diff, tolerance, within, comparable, paper_source,
  condition``, then ``dataset`` and the other typed index columns. ``comparable`` is false where the run does not
  meet the conditions of the row's paper value (repro/engine/references.py): ``paper`` is context,
  ``diff``/``tolerance``/``within`` are empty, and ``condition`` names the first condition that differs.
- ``tables/<name>.csv``: extra tables returned by trials (per-hypothesis tables, curves...).
- figures as ``<stem>.png`` and ``<stem>.pdf``.
- ``run.json``: command, config, versions, git commit, wall time, status, and the datasets that ran
  (``datasets``: per dataset and data mode, its module, the module's and the raw files' sha256;
  ``datasets_sha256``: the raw files of those datasets, and the authors' rebuilt files by git blob).

A run is written into a temporary sibling folder and moved into place only when complete, with
``run.json`` written last, so an interrupted run never leaves a result that looks complete.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from repro import __version__
from repro.engine.cache import atomic_write_text, module_exists
from repro.engine.identity import canonical_json
from repro.engine.spec import ExperimentSpec
from repro.engine.user_method import USER_KEY
from repro.errors import InvalidParameterError, NoResultsError

__all__ = ["ResultBundle", "check_output_dir", "not_comparable", "verdict_counts", "verdict_line", "figure_mark", "NOT_COMPARABLE", "clean_stale_partials", "result_dir", "run_dir", "write_results",
           "software_versions", "git_commit"]

_VERSIONED = ("numpy", "pandas", "scipy", "scikit-learn", "lightgbm", "matplotlib", "dp-accounting",
              "folktables", "joblib", "click")


def result_dir(out: Path, experiment_id: str, profile: str, variant: str, default_variant: str,
               overrides: Mapping[str, Any] | None = None, *, seeds: int | None = None,
               base_seed: int | None = None, user_methods: Sequence[str] = ()) -> Path:
    """Folder of one run's results.

    ``<out>/<id>/<profile>`` for the default variant, ``<profile>-<variant>`` otherwise, then a suffix
    for each way the run departs from the profile as the file declares it: ``+set-<hash>`` for ``--set``
    overrides, ``+seeds-N`` and ``+base-seed-B`` for another number of seeds or base seed (pass them only
    when they differ from the file's), ``+with-<hash>`` for ``--with`` methods (their keys). So such a run
    never replaces the profile's own results; ``run.json`` records what was given.
    """
    leaf = profile if variant == default_variant else f"{profile}-{variant}"
    if overrides:
        digest = hashlib.sha256(canonical_json({k: list(v) for k, v in overrides.items()}).encode()).hexdigest()
        leaf += f"+set-{digest[:8]}"
    if seeds is not None:
        leaf += f"+seeds-{seeds}"
    if base_seed is not None:
        leaf += f"+base-seed-{base_seed}"
    if user_methods:
        leaf += f"+with-{hashlib.sha256(canonical_json(sorted(user_methods)).encode()).hexdigest()[:8]}"
    return Path(out) / experiment_id / leaf


def run_dir(spec: ExperimentSpec, config: Any, variant: str) -> Path:
    """:func:`result_dir` of a run of ``spec`` under ``config`` (a :class:`~repro.engine.runner.RunConfig`)."""
    seeds = config.seeds if config.seeds not in (None, spec.profile(config.profile).seeds) else None
    base_seed = config.base_seed if config.base_seed not in (None, spec.base_seed) else None
    users = sorted({str(c[USER_KEY]) for c in spec.expand_cells(config.profile) if USER_KEY in c})
    return result_dir(config.out, spec.id, config.profile, variant, spec.default_variant, config.overrides,
                      seeds=seeds, base_seed=base_seed, user_methods=users)


def user_method_refs(spec: ExperimentSpec, profile: str) -> list[dict[str, str]]:
    """The run's ``--with`` methods as ``run.json`` records them: name, reference as shown (never a machine
    path) and the sha256 of the code, so reports tell runs with different methods apart."""
    from repro.engine.user_method import resolve

    out = []
    for cell in spec.expand_cells(profile):
        if USER_KEY in cell and all(m["key"] != cell[USER_KEY] for m in out):
            method = resolve(str(cell[USER_KEY]))
            out.append({"key": method.key, "method": method.name, "reference": method.ref, "sha256": method.sha256})
    return [{k: v for k, v in m.items() if k != "key"} for m in out]


def datasets_ran(spec: ExperimentSpec, config: Any) -> list[dict[str, Any]]:
    """The datasets a run of ``spec`` under ``config`` loaded, one entry per (dataset, data mode), for run.json:
    the dataset's name, its data mode (None: the study's only one), the module that declares it (its file path
    relative to the ``$REPRO_DATASET_PATH`` folder holding it, else its module name), that file's sha256, and the
    sha256 of each raw source file it reads in the data cache now (None: not cached). A ``dataset`` value that
    names no registered dataset (a study's own choice of data) is not listed."""
    from repro.datasets import registry
    from repro.datasets.store import dataset_checksums
    from repro.engine.cache import plugin_path_folders
    from repro.errors import ReproError

    overrides = spec.coerce_overrides(config.overrides) if config.overrides else {}
    fixed = spec.fixed_params(config.profile, overrides)
    pairs: list[tuple[Any, Any]] = []
    for cell in spec.expand_cells(config.profile, overrides):
        pair = (cell.get("dataset", fixed.get("dataset")), cell.get("data", fixed.get("data")))
        if pair not in pairs:
            pairs.append(pair)
    out = []
    for name, data in pairs:
        if not isinstance(name, str):
            continue
        try:
            entry = registry.get_dataset(name)
        except (ReproError, RuntimeError):
            continue
        found = importlib.util.find_spec(entry.module)
        path = Path(found.origin) if found is not None and found.origin else None
        module = entry.module
        for folder in plugin_path_folders("repro.datasets"):
            if path is not None and path.resolve().is_relative_to(folder.resolve()):
                module = f"$REPRO_DATASET_PATH/{path.resolve().relative_to(folder.resolve()).as_posix()}"
        sources = list(entry.sources)
        if data == "authors" and entry.authors is not None:
            sources += [n for n in entry.authors.sources if n not in sources]
        try:
            hashes = dataset_checksums(sources)
        except ReproError:
            hashes = {n: None for n in sources}
        out.append({"dataset": name, "data": data, "module": module,
                    "module_sha256": hashlib.sha256(path.read_bytes()).hexdigest() if path is not None else None,
                    "sources_sha256": hashes})
    return out


def check_output_dir(out: Path) -> Path:
    """Create ``out`` (and its ``.cache``) and check a file can be written there, before any trial runs.

    Raises
    ------
    InvalidParameterError
        One line naming the folder, the cause and the fix (``--out`` under ``/proc`` or ``/sys``,
        below a regular file, read-only, ...).
    """
    out = Path(out)
    try:
        for folder in (out, out / ".cache"):
            if folder.exists() and not folder.is_dir():
                raise NotADirectoryError(20, "it is a file, not a folder", str(folder))
            folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as err:
        where = err.filename or out
        raise InvalidParameterError(
            f"results folder {out} cannot be used ({where}: {err.strerror or type(err).__name__}); "
            "pass a writable folder with --out DIR (or set REPRO_RESULTS_DIR)"
        ) from err
    return out


_STALE_AFTER = 3600.0  # seconds; a .partial folder without a live owner older than this is stale


def _owner_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_partials(final: Path) -> list[Path]:
    """Remove ``.partial`` folders of ``final`` left by killed runs; return what was removed.

    A partial folder is named ``.<leaf>.<pid>.<random>.partial``; it is stale when that process is
    gone (another run writing now keeps its own), or, for names without a pid, when it is older
    than an hour.
    """
    removed = []
    if not final.parent.is_dir():
        return removed
    for path in final.parent.glob(f".{final.name}.*.partial"):
        middle = path.name[len(final.name) + 2: -len(".partial")]
        pid_text = middle.split(".", 1)[0]
        if pid_text.isdigit() and "." in middle:
            stale = not _owner_alive(int(pid_text))
        else:
            try:
                stale = time.time() - path.stat().st_mtime > _STALE_AFTER
            except OSError:
                continue
        if stale:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def software_versions() -> dict[str, str]:
    versions = {"python": platform.python_version(), "repro": __version__}
    for name in _VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def git_commit() -> str | None:
    """Commit of the checkout this package runs from (with ``+dirty`` if modified), or None."""
    root = Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + ("+dirty" if dirty else "")


@dataclass
class ResultBundle:
    """Saved results of one run, read back from disk (what plots and reports use)."""

    spec: ExperimentSpec
    directory: Path
    trials: pd.DataFrame
    summary: pd.DataFrame
    run: dict[str, Any]
    _tables: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def profile(self) -> str:
        return self.run.get("profile", "")

    @property
    def variant(self) -> str:
        return self.run.get("variant", "")

    _MISSING: Any = object()

    def table(self, name: str, default: Any = _MISSING) -> Any:
        """The extra table ``tables/<name>.csv`` (loaded on first use).

        ``default`` (e.g. ``None``): returned when the run wrote no such table (an optional table, or
        results older than the table); without it a missing table raises :class:`NoResultsError`. An empty
        file is an empty frame. Only absence is forgiven: a malformed file still raises.
        """
        if name not in self._tables:
            path = self.directory / "tables" / f"{name}.csv"
            if not path.exists():
                if default is not ResultBundle._MISSING:
                    return default
                raise NoResultsError(f"{self.spec.id}: no table {name!r} in {self.directory}")
            try:
                self._tables[name] = pd.read_csv(path)
            except pd.errors.EmptyDataError:
                self._tables[name] = pd.DataFrame()
        return self._tables[name]

    def figures(self) -> list[Path]:
        return sorted(self.directory.glob("*.png"))

    @classmethod
    def load(cls, spec: ExperimentSpec, directory: Path) -> ResultBundle:
        """Read a completed run; raises NoResultsError naming the command that makes it."""
        run_json = directory / "run.json"
        if not run_json.exists():
            raise NoResultsError(
                f"no completed results for {spec.id!r} in {directory}; run `repro run {spec.id}` first"
            )
        run = json.loads(run_json.read_text())
        # a published run (docs/results) holds its trials gzip-compressed (repro/engine/publish.py)
        trials_csv = directory / "trials.csv"
        trials = pd.read_csv(trials_csv if trials_csv.is_file() else directory / "trials.csv.gz")
        summary = pd.read_csv(directory / "summary.csv")
        return cls(spec, directory, trials, summary, run)


def verdict_counts(summary: pd.DataFrame) -> tuple[int, int]:
    """(number of rows within tolerance, number of rows with a paper value and a tolerance)."""
    judged = summary[summary["within"].notna()] if "within" in summary else summary.iloc[0:0]
    ok = int(judged["within"].astype(str).str.lower().eq("true").sum())
    return ok, len(judged)


def not_comparable(summary: pd.DataFrame) -> tuple[int, str]:
    """(number of rows whose paper value is context only, the first such row's differing condition): the rows a
    reference applies to whose run does not meet its conditions (repro/engine/references.py)."""
    if "comparable" not in summary:
        return 0, ""
    rows = summary[summary["comparable"].astype(str).str.lower().eq("false")]
    if rows.empty:
        return 0, ""
    reason = rows["condition"].dropna().astype(str) if "condition" in rows else pd.Series(dtype=str)
    return len(rows), (reason.iloc[0] if not reason.empty else "")


#: the verdict of a row whose run does not meet its reference's conditions (repro/engine/references.py)
NOT_COMPARABLE = "not comparable"


def verdict_line(summary: pd.DataFrame, *, hidden: bool = False) -> str:
    """One line on a run's paper comparisons: how many lie within tolerance, and how many paper values are
    context only (the run does not meet their conditions), with the first reason. ``hidden``: results saved
    before the ``comparable`` column whose verdicts were not meant to be read (smoke)."""
    ok, judged = verdict_counts(summary)
    context, reason = not_comparable(summary)
    n_paper = int(summary["paper"].notna().sum()) if "paper" in summary else 0
    parts = []
    if judged and hidden:
        parts.append(f"not judged: smoke profile ({judged} paper values; run `--profile full`)")
    elif judged:
        parts.append(f"{ok} of {judged} paper comparisons within tolerance")
    if context:
        parts.append(f"{context} paper values {NOT_COMPARABLE} (shown as context: {reason})")
    shown = n_paper - judged - context
    if shown > 0:
        parts.append(f"{shown} paper values shown (no tolerance declared: none is judged)")
    return "; ".join(parts) if parts else "no numeric paper values to compare (see the notes)"


def report_module_name(spec: ExperimentSpec) -> str:
    """The module holding a study's ``plot`` and ``report_markdown``: ``<study>_report`` beside the
    study when it exists (it imports the study, never the reverse), else the study module itself."""
    companion = f"{spec.trial}_report"
    return companion if module_exists(companion) else spec.trial


def report_hook(spec: ExperimentSpec, name: str) -> Any:
    """``plot`` or ``report_markdown`` of an experiment's study, or None when it has none."""
    return getattr(importlib.import_module(report_module_name(spec)), name, None)


def figure_mark(bundle: ResultBundle) -> str | None:
    """The words every figure of ``bundle`` carries when its paper values are not comparable (the same rule as
    the summary: repro/engine/references.py), or None: a run at a profile its file does not judge (smoke: a
    wiring check) or whose rows do not meet their references' conditions shows the paper's points as context."""
    context, reason = not_comparable(bundle.summary)
    judged = bundle.spec.reference_defaults.profiles
    if bundle.profile and bundle.profile not in judged:
        what = ("smoke profile: wiring check, not a reproduction" if bundle.profile == "smoke"
                else f"{bundle.profile} profile: a reduced run, not the paper's configuration")
        return what + ("; paper points are context only" if bundle.spec.references else "")
    n_paper = int(bundle.summary["paper"].notna().sum()) if "paper" in bundle.summary else 0
    if context and context < n_paper:
        return f"{context} of {n_paper} paper values not comparable ({reason}): those points are context only"
    if context:
        return f"not comparable to the paper ({reason}); paper points are context only"
    return None


@contextmanager
def _marked(text: str | None) -> Any:
    """While the study draws: every figure it saves carries ``text`` above its top, and above its suptitle (red,
    boxed; the studies save with a tight bounding box, which grows to hold it)."""
    if text is None:
        yield
        return
    from matplotlib.figure import Figure

    original = Figure.savefig

    def savefig(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not getattr(self, "_repro_marked", False):
            top = max([1.0, *(t.get_position()[1] + 0.04 for t in self.texts if t.get_position()[1] >= 0.9)])
            self.text(0.5, top, text, ha="center", va="bottom", fontsize=9, color="#b00000", weight="bold",
                      bbox={"facecolor": "white", "edgecolor": "#b00000", "pad": 2})   # above it: a tight save grows
            self._repro_marked = True
        return original(self, *args, **kwargs)

    Figure.savefig = savefig  # type: ignore[method-assign]
    try:
        yield
    finally:
        Figure.savefig = original  # type: ignore[method-assign]


def draw_figures(bundle: ResultBundle, outdir: Path) -> list[Path]:
    """Call the study's ``plot`` on saved results (no-op if the study has no figures); a figure whose paper
    values are not comparable carries :func:`figure_mark` across its top."""
    plot = report_hook(bundle.spec, "plot")
    if plot is None:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        with _marked(figure_mark(bundle)):
            return list(plot(bundle, outdir))
    finally:
        plt.close("all")


def honour_umask(path: Path) -> None:
    """Give ``path`` the mode a plain ``open``/``mkdir`` would (0666/0777 less the umask): the temporary-file
    helpers create 0600 files and 0700 folders, which collaborators on a shared results folder cannot read."""
    mask = os.umask(0)
    os.umask(mask)
    path.chmod((0o777 if path.is_dir() else 0o666) & ~mask)


def write_results(outcome: Any, *, command: str, dataset_sha256: dict[str, str]) -> Path:
    """Write a :class:`~repro.engine.runner.RunOutcome` atomically and draw its figures; return the folder."""
    spec: ExperimentSpec = outcome.spec
    config = outcome.config
    final = run_dir(spec, config, outcome.variant)
    final.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_partials(final)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.{os.getpid()}.", suffix=".partial"))
    try:
        honour_umask(tmp)
        outcome.trials.to_csv(tmp / "trials.csv", index=False)
        outcome.summary.to_csv(tmp / "summary.csv", index=False)
        if outcome.tables:
            (tmp / "tables").mkdir()
            for name, frame in outcome.tables.items():
                frame.to_csv(tmp / "tables" / f"{name}.csv", index=False)
        run = {
            "result_id": spec.id,
            "title": spec.title,
            "status": "complete",
            "command": command,
            "profile": config.profile,
            "variant": outcome.variant,
            "seeds": outcome.n_seeds,
            "base_seed": spec.base_seed if config.base_seed is None else config.base_seed,
            "jobs": config.jobs,
            "backend": config.backend,
            "overrides": {k: list(v) for k, v in config.overrides.items()},
            "params": spec.fixed_params(config.profile, config.overrides),
            "n_trials": outcome.n_trials,
            "n_cached": outcome.n_cached,
            "wall_seconds": round(outcome.wall_seconds, 3),
            "trial_seconds_total": round(float(getattr(outcome, "trial_seconds", 0.0)), 3),
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "versions": software_versions(),
            "git_commit": git_commit(),
            "platform": f"{platform.system()} {platform.machine()}",
            "argv": sys.argv,
            "datasets_sha256": dataset_sha256,
            "datasets": datasets_ran(spec, config),
            "experiment_file": spec.path.name if spec.path else None,
            "with": user_method_refs(spec, config.profile),
        }
        # Figures are drawn from the files just written, exactly as `repro plot` does.
        bundle = ResultBundle(spec, tmp, pd.read_csv(tmp / "trials.csv"), pd.read_csv(tmp / "summary.csv"), run)
        figures = draw_figures(bundle, tmp)
        run["figures"] = [p.name for p in figures]
        atomic_write_text(tmp / "run.json", json.dumps(run, indent=2, default=str))
        honour_umask(tmp / "run.json")
        backup = None
        if final.exists():
            backup = final.with_name(f".{final.name}.old")
            shutil.rmtree(backup, ignore_errors=True)
            final.rename(backup)
        tmp.rename(final)
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final
