"""Write ``docs/cli.md``, the command-line reference, from the commands' own ``--help`` texts.

    python -m repro.cli.gen_docs            # rewrite docs/cli.md
    python -m repro.cli.gen_docs --check    # exit 1 if docs/cli.md differs from the generated text

``tests/core/test_readme.py`` keeps the file equal to :func:`render` (so ``--help`` is the one source).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

WIDTH = 100
DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
HEADER = ("# Command-line reference\n\n"
          "For anyone who wants every option of every `repro` command in one place, exactly as `--help` prints "
          "it. Generated from `--help` by `python -m repro.cli.gen_docs`; do not edit by hand. Back to the "
          "[README](../README.md); the options of `repro run` are explained with examples in "
          "[running.md](running.md).\n")


def _help(command: click.Command, path: list[str], parent: click.Context | None) -> list[tuple[str, str]]:
    """(``repro sub …``, help text) for ``command`` and, for a group, each of its subcommands."""
    settings = {**command.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    ctx = click.Context(command, info_name=path[-1], parent=parent, **settings)
    out = [(" ".join(path), command.get_help(ctx))]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                out += _help(sub, [*path, name], ctx)
    return out


def render() -> str:
    """The text of ``docs/cli.md``."""
    from repro.cli import main

    parts = [HEADER]
    for name, text in _help(main, ["repro"], None):
        parts.append(f"## `{name}`\n\n```text\n{text.rstrip()}\n```\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in args:
        same = DOC.exists() and DOC.read_text(encoding="utf-8") == text
        if not same:
            print(f"{DOC} is out of date: run `python -m repro.cli.gen_docs`", file=sys.stderr)
        return 0 if same else 1
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text, encoding="utf-8")
    print(DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main())
