"""Publish the latest full-profile runs into ``docs/results/``, the folder the results site is built from.

``python -m repro.engine.publish RESULTS_DIR [RESULTS_DIR ...] [--out docs/results]`` copies, for every result,
the default variant's ``full`` run (``cpu`` where the full profile needs an accelerator and no full run is
saved) found in the first folder that holds one: ``run.json``, ``summary.csv``, ``trials.csv``, ``tables/*.csv``
up to :data:`TABLE_LIMIT_BYTES` each (larger ones are named in the published ``run.json``) and the PNG figures
(no PDFs, no caches). To keep every result within :data:`LIMIT_BYTES`, figures are re-encoded as palette PNGs
(at most 256 colours, same pixels size; plots use few colours) and ``trials.csv`` is published gzip-compressed as
``trials.csv.gz`` (read back transparently by :meth:`repro.engine.results.ResultBundle.load`); summaries and tables
stay plain CSV. ``run.json`` is published without what names the machine it ran on
(``argv``, the ``--out`` folder in ``command``). A result none of the folders holds keeps what was published
before. The published folder may hold at most :data:`LIMIT_BYTES`; a copy that would exceed it is refused
before anything is written. ``repro report --html --from docs/results`` then builds the site from it.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from repro.engine.fidelity import saved_run
from repro.engine.folders import replaced_folder
from repro.engine.spec import ExperimentSpec, load_all
from repro.errors import InvalidParameterError

__all__ = ["LIMIT_BYTES", "TABLE_LIMIT_BYTES", "published_run", "publish_files", "published_bytes", "sanitised_run",
           "publish", "unpublished_tables", "main"]

#: the most the published folder may hold (every result together)
LIMIT_BYTES = 10 * 1024 * 1024
#: the largest ``tables/*.csv`` published; a larger one (a figure's raw curves) is left out and named in the
#: published ``run.json`` (``unpublished_tables``): the figures and the summary carry what the site shows
TABLE_LIMIT_BYTES = 256 * 1024
_FILES = ("run.json", "summary.csv", "trials.csv")


def published_run(spec: ExperimentSpec, folders: Sequence[Path]) -> Path | None:
    """The run of ``spec`` to publish: :func:`repro.engine.fidelity.saved_run` (the first ``<folder>/<id>/full/``
    with a ``run.json``; else, for a result whose full profile needs an accelerator, the first ``cpu`` run)."""
    return saved_run(spec, folders)


def publish_files(directory: Path) -> list[Path]:
    """The files of a run that are published, relative to its folder."""
    names = [Path(n) for n in _FILES if (directory / n).is_file()]
    names += [p.relative_to(directory) for p in _tables(directory) if p.stat().st_size <= TABLE_LIMIT_BYTES]
    return names + sorted(p.relative_to(directory) for p in directory.glob("*.png"))


def _tables(directory: Path) -> list[Path]:
    return sorted((directory / "tables").glob("*.csv")) if (directory / "tables").is_dir() else []


def unpublished_tables(directory: Path) -> dict[str, int]:
    """{table: bytes} of the run's tables over :data:`TABLE_LIMIT_BYTES`, which are not published."""
    return {p.relative_to(directory).as_posix(): p.stat().st_size for p in _tables(directory)
            if p.stat().st_size > TABLE_LIMIT_BYTES}


_OUT = re.compile(r"\s--out(?:=|\s+)(?:'[^']*'|\"[^\"]*\"|\S+)")


def sanitised_run(run: Mapping[str, Any]) -> dict[str, Any]:
    """``run.json`` as published: without ``argv`` (the machine's path to the command) and without the
    ``--out`` folder in ``command`` (where the run was written says nothing about how it was made)."""
    out = {k: v for k, v in run.items() if k != "argv"}
    if isinstance(out.get("command"), str):
        out["command"] = _OUT.sub("", out["command"])
    return out


def published_bytes(directory: Path, rel: Path) -> tuple[Path, bytes]:
    """(name, bytes) of one published file of the run in ``directory``: ``run.json`` sanitised (and naming the
    tables left out), PNGs as palette PNGs, ``trials.csv`` as ``trials.csv.gz``; everything else as it is.
    Deterministic: the same run gives the same bytes."""
    source = directory / rel
    if rel.name == "run.json":
        run = sanitised_run(json.loads(source.read_text(encoding="utf-8")))
        if left_out := unpublished_tables(directory):
            run["unpublished_tables"] = left_out
        return rel, (json.dumps(run, indent=2) + "\n").encode("utf-8")
    if rel.suffix == ".png":
        return rel, _palette_png(source)
    if rel.as_posix() == "trials.csv":
        return rel.with_name("trials.csv.gz"), gzip.compress(source.read_bytes(), compresslevel=9, mtime=0)
    return rel, source.read_bytes()


def _palette_png(path: Path) -> bytes:
    """The figure as an opaque palette PNG (≤ 256 colours, no dithering), over white where it was transparent."""
    from PIL import Image

    with Image.open(path) as image:
        rgba = image.convert("RGBA")
    opaque = Image.alpha_composite(Image.new("RGBA", rgba.size, "white"), rgba).convert("RGB")
    palette = opaque.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    palette.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def publish(specs: Mapping[str, ExperimentSpec], folders: Sequence[Path], out: Path) -> dict[str, Path]:
    """Copy every result's run to publish (:func:`published_run`) into ``out/<id>/``; return {id: source run}.

    Raises
    ------
    InvalidParameterError
        When no folder holds a run to publish, or the published folder would exceed :data:`LIMIT_BYTES`
        (nothing is written then).
    """
    out = Path(out)
    chosen = {eid: d for eid, spec in sorted(specs.items()) if (d := published_run(spec, folders)) is not None}
    if not chosen:
        raise InvalidParameterError(f"no full-profile run under {', '.join(map(str, folders))}; run "
                                    "`repro run all --profile full --jobs 2` first (or name the folder holding it)")
    encoded = {eid: {name: data for rel in publish_files(d) for name, data in [published_bytes(d, rel)]}
               for eid, d in chosen.items()}
    new = {eid: sum(len(b) for b in files.values()) for eid, files in encoded.items()}
    kept = sum(_size(p) for p in out.iterdir() if p.is_dir() and p.name not in chosen) if out.is_dir() else 0
    total = kept + sum(new.values())
    if total > LIMIT_BYTES:
        largest = ", ".join(f"{e} {b / 1e6:.1f} MB" for e, b in sorted(new.items(), key=lambda x: -x[1])[:3])
        raise InvalidParameterError(f"the published results would take {total / 1e6:.1f} MB, over the "
                                    f"{LIMIT_BYTES / 1e6:.1f} MB limit (largest: {largest}); nothing was written")
    for eid, directory in chosen.items():
        with replaced_folder(out / eid, file_mode=0o644) as tmp:
            for name, data in encoded[eid].items():
                (tmp / directory.name / name).parent.mkdir(parents=True, exist_ok=True)
                (tmp / directory.name / name).write_bytes(data)
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m repro.engine.publish", description=__doc__.split("\n")[0])
    parser.add_argument("results", nargs="+", help="results folder(s) holding full-profile runs; the first holding "
                                                   "a result's run is read")
    parser.add_argument("--out", default="docs/results", help="the published folder (default: docs/results)")
    args = parser.parse_args(argv)
    try:
        chosen = publish(load_all(strict=True), [Path(r) for r in args.results], Path(args.out))
    except InvalidParameterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for eid, directory in chosen.items():
        print(f"{eid}: {directory}")
    print(f"{len(chosen)} results published in {args.out} ({_size(Path(args.out)) / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
