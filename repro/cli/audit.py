"""``repro audit``: empirical (or exact) lower bounds on ε beside the claimed ε (issue 14).

``--out DIR`` writes ``audit.csv`` with the columns of :data:`CSV_COLUMNS` and the figure
``audit.png`` / ``audit.pdf`` (claimed ε vs audited ε per mechanism, y = x line, violations marked).
Exit status 1 only when an *accounted* or *public-statistics* claim is violated; a beaten *nominal*
claim is reported as "nominal: exceeded".
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import click

from repro.audit import MECHANISMS, AuditResult, run_audit
from repro.plotting import new_figure, save_figure

#: audit.csv columns: mechanism; claimed ε and its label (accounted / nominal / public-statistics caveat);
#: δ at which both are stated; audited ε (a lower bound at the confidence level, or exact = confidence 1);
#: method (clopper-pearson or exact); runs per side (0 for exact); verdict; note (setting of the attack).
CSV_COLUMNS = ("mechanism", "claimed_epsilon", "label", "delta", "epsilon_lower_bound", "confidence", "method",
               "runs_per_side", "verdict", "note")


def _row(r: AuditResult) -> dict[str, object]:
    return {c: getattr(r, c) for c in CSV_COLUMNS}


def plot_audit(results: list[AuditResult], outdir: Path) -> list[Path]:
    """Claimed ε (x) vs audited ε (y) per mechanism; points above y = x are violations (red) or exceeded
    nominal claims (orange); exact audits are squares, Clopper–Pearson bounds circles."""
    fig, axes = new_figure(width=6.0, height=4.2)
    ax = axes[0][0]
    finite = [r for r in results if math.isfinite(r.epsilon_lower_bound)]
    top = max([r.claimed_epsilon for r in results] + [r.epsilon_lower_bound for r in finite] + [1.0]) * 1.1
    ax.plot([0, top], [0, top], color="0.4", lw=1, ls="--", label="y = x (claim met with equality)")
    for r in results:
        colour = {"violated": "tab:red", "nominal: exceeded": "tab:orange"}.get(r.verdict, "tab:blue")
        yv = r.epsilon_lower_bound if math.isfinite(r.epsilon_lower_bound) else top
        ax.plot(r.claimed_epsilon, yv, marker="s" if r.method == "exact" else "o", color=colour, ls="none",
                markersize=6)
        conf = "exact" if r.method == "exact" else f"{r.confidence:.0%}"
        ax.annotate(f"{r.mechanism} ({r.label}; {conf})", (r.claimed_epsilon, yv), fontsize=5.5,
                    xytext=(3, 2), textcoords="offset points")
    ax.plot([], [], "o", color="tab:blue", label="no violation found")
    ax.plot([], [], "o", color="tab:red", label="violated (accounted claim)")
    ax.plot([], [], "o", color="tab:orange", label="nominal claim exceeded")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel("claimed ε (at the claimed δ)")
    ax.set_ylabel("audited ε (lower bound or exact)")
    ax.set_title("repro audit: claimed vs audited ε")
    ax.legend(loc="upper left", fontsize=6)
    return save_figure(fig, outdir, "audit")


@click.command("audit")
@click.argument("names", nargs=-1, metavar=f"[{'|'.join(MECHANISMS)}...|all]")
@click.option("--profile", type=click.Choice(["smoke", "full"]), default="smoke", show_default=True,
              help="smoke: few runs per side (CI, < 1 min); full: more runs (README table).")
@click.option("--seed", type=int, default=0, show_default=True, help="Root of the audit's SeedSequence.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Also write DIR/audit.csv and the figure DIR/audit.png, DIR/audit.pdf.")
def audit(names: tuple[str, ...], profile: str, seed: int, out: Path | None) -> None:
    """Attack each mechanism on worst-case neighbours; 'violated' (exit 1) if an accounted claim is beaten."""
    results = run_audit(list(names), profile, seed)
    click.echo("| mechanism | claimed ε (label) | δ | audited ε (confidence) | method | runs/side | verdict |")
    click.echo("|---|---|---|---|---|---|---|")
    for r in results:
        conf = "exact" if r.method == "exact" else f"{r.confidence:.0%}"
        click.echo(f"| {r.mechanism} | {r.claimed_epsilon:.3f} ({r.label}) | {r.delta:.3g} | "
                   f"{r.epsilon_lower_bound:.3f} ({conf}) | {r.method} | {r.runs_per_side} | {r.verdict} |")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "audit.csv", "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(CSV_COLUMNS))
            writer.writeheader()
            writer.writerows(_row(r) for r in results)
        plot_audit(results, out)
    if any(r.verdict == "violated" for r in results):
        raise SystemExit(1)
