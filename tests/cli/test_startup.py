"""`repro --help` and `repro list` start without the scientific stack (issue #24, item 8).

Timing is measured by ``benchmarks/cli_startup.py``; the tests check the cause of a slow start
(which modules a command imports), which does not depend on the machine's load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
HEAVY = ("numpy", "pandas", "matplotlib", "scipy", "sklearn", "lightgbm", "jax", "dp_accounting")

PROBE = """
import json, sys
from repro.cli import main
try:
    main(sys.argv[1:], prog_name="repro")
except SystemExit:
    pass
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})), file=sys.stderr)
"""


def imported_top_level(*args: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REPRO_EXPERIMENTS_DIR": str(ROOT / "experiments")}
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [("--help",), ("list",), ("list", "--ids"), ("data", "--help")])
def test_light_commands_do_not_import_the_scientific_stack(args: tuple[str, ...]) -> None:
    modules = imported_top_level(*args)
    assert "repro" in modules and "click" in modules  # the probe ran the command
    heavy = modules & set(HEAVY)
    assert not heavy, f"repro {' '.join(args)} imported {sorted(heavy)}"


def test_help_lists_every_command_without_importing_it() -> None:
    from click.testing import CliRunner

    from repro.cli import COMMANDS, main, module_exists

    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for name, (module, _, short) in COMMANDS.items():
        if module_exists(module):
            assert f"{name}  " in result.output and short.split(":")[0] in result.output


def test_every_lazy_command_resolves_to_its_click_command() -> None:
    import click

    from repro.cli import COMMANDS, main, module_exists

    ctx = click.Context(main)
    for name, (module, _, _) in COMMANDS.items():
        command = main.get_command(ctx, name)
        assert (command is not None) == module_exists(module)
        if command is not None:
            assert isinstance(command, click.Command) and command.name == name
