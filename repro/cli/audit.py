"""``repro audit``: empirical lower bounds on ε beside the claimed ε (issue 14; smoke version)."""

from __future__ import annotations

import csv
from pathlib import Path

import click

from repro.audit import MECHANISMS, run_audit


@click.command("audit")
@click.argument("names", nargs=-1, metavar=f"[{'|'.join(MECHANISMS)}...|all]")
@click.option("--profile", type=click.Choice(["smoke", "full"]), default="smoke", show_default=True,
              help="smoke: fewer runs per side (CI); full: 10x more.")
@click.option("--seed", type=int, default=0, show_default=True, help="Root of the audit's SeedSequence.")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="Also write DIR/audit.csv.")
def audit(names: tuple[str, ...], profile: str, seed: int, out: Path | None) -> None:
    """Attack each mechanism on worst-case neighbours; verdict 'violated' if the lower bound exceeds the claim."""
    results = run_audit(list(names), profile, seed)
    rows = [{"mechanism": r.mechanism, "claimed_epsilon": r.claimed_epsilon, "label": r.label, "delta": r.delta,
             "epsilon_lower_bound": r.epsilon_lower_bound, "confidence": r.confidence,
             "runs_per_side": r.runs_per_side, "verdict": r.verdict} for r in results]
    click.echo("| mechanism | claimed ε (label) | δ | audited ε lower bound (confidence) | runs/side | verdict |")
    click.echo("|---|---|---|---|---|---|")
    for r in rows:
        click.echo(f"| {r['mechanism']} | {r['claimed_epsilon']:.3f} ({r['label']}) | {r['delta']:g} | "
                   f"{r['epsilon_lower_bound']:.3f} ({r['confidence']:.0%}) | {r['runs_per_side']} | {r['verdict']} |")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "audit.csv", "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    if any(r["verdict"] == "violated" for r in rows):
        raise SystemExit(1)
