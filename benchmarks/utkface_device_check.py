"""The Figure 5 GPU check in one call (issues 34 and 37): DP-FERMI's UTKFace CNN at the full resolution and
epochs (128 px, 150 epochs, batch 64) for ε ∈ {10, 100}, λ ∈ {0, 10}, one seed, the λ of each ε trained
together (``vmap``), and the two ε as two worker processes on the one GPU. Prints images/s and the points
beside the released ones; the target is error and violation within 0.05 of the released values.

Three steps, the first here, the two others on the device machine, back to back (it stays warm 30 s):

1. ``python benchmarks/utkface_device_check.py prepare`` (here, with ``REPRO_DATA_MIRROR`` set): splits the
   106 MB archive into ``.device/UTKFace.tar.gz.part-0`` and ``-1`` (a call carries ≤ 64 MiB), copies the
   per-image list, downloads the wheels the device's ``python3`` lacks into ``.whl/`` and git-ignores both.
2. Device call 1, carrying ``.device/UTKFace.tar.gz.part-0``: ``cp .device/UTKFace.tar.gz.part-0 /tmp/``.
3. Device call 2, carrying ``.device/UTKFace.tar.gz.part-1``, ``.device/UTKFace.images.sha256`` and ``.whl``:
   ``python3 benchmarks/utkface_device_check.py run`` (rejoins the archive, checks its sha256, installs the
   wheels into /tmp/site, runs, prints). Give it ``timeout_s`` 600; it is sized for ≤ 8 min on one H200.

``run --smoke`` runs the same command at the smoke profile on the CPU (the wiring, here).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEVICE = ROOT / ".device"
WHEELS = ROOT / ".whl"
ARCHIVE = "UTKFace.tar.gz"
LIST = "UTKFace.images.sha256"
#: the mirror's archive (shared/data/MANIFEST.md)
ARCHIVE_SHA256 = "5f1deda98da38f111ad452aae26b876c2c3a63ce21b64e60e093a2d385496247"
#: what the device's python3 lacks of the core dependencies (its image has JAX with CUDA, numpy, pandas, …)
DEVICE_WHEELS = ("lightgbm", "folktables", "dp-accounting", "dm-tree", "xlrd")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64", "any")


def _ignore(entry: str) -> None:
    exclude = ROOT / ".git" / "info" / "exclude"
    lines = exclude.read_text().splitlines() if exclude.exists() else []
    if entry not in lines:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text("\n".join([*lines, entry]) + "\n")


def prepare() -> None:
    mirror = os.environ.get("REPRO_DATA_MIRROR")
    if not mirror:
        sys.exit("set REPRO_DATA_MIRROR to the data mirror (the folder holding derived/UTKFace.tar.gz).")
    src = Path(mirror) / "derived"
    data = (src / ARCHIVE).read_bytes()
    if hashlib.sha256(data).hexdigest() != ARCHIVE_SHA256:
        sys.exit(f"{src / ARCHIVE}: sha256 differs from the registered {ARCHIVE_SHA256}; run `repro data verify`.")
    DEVICE.mkdir(exist_ok=True)
    half = len(data) // 2
    for i, part in enumerate((data[:half], data[half:])):
        (DEVICE / f"{ARCHIVE}.part-{i}").write_bytes(part)
    shutil.copyfile(src / LIST, DEVICE / LIST)
    platforms = [a for p in PLATFORMS for a in ("--platform", p)]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", *platforms, "-d", str(WHEELS),
                    *DEVICE_WHEELS], check=True)
    _ignore("/.device/")
    _ignore("/.whl/")
    print(f"prepared {DEVICE} (two parts of {len(data):,} bytes, the image list) and {WHEELS}")


def _mirror() -> Path:
    """Rejoin the two parts into a mirror folder and check the archive's sha256."""
    mirror = Path("/tmp/repro-mirror")
    (mirror / "derived").mkdir(parents=True, exist_ok=True)
    first = Path("/tmp") / f"{ARCHIVE}.part-0"
    parts = [first if first.exists() else DEVICE / f"{ARCHIVE}.part-0", DEVICE / f"{ARCHIVE}.part-1"]
    data = b"".join(p.read_bytes() for p in parts)
    digest = hashlib.sha256(data).hexdigest()
    if digest != ARCHIVE_SHA256:
        sys.exit(f"rejoined archive has sha256 {digest}, expected {ARCHIVE_SHA256}: a part is missing or cut.")
    (mirror / "derived" / ARCHIVE).write_bytes(data)
    shutil.copyfile(DEVICE / LIST, mirror / "derived" / LIST)
    print(f"archive rejoined and verified ({len(data):,} bytes, sha256 {digest[:12]}…)", flush=True)
    return mirror


def run(smoke: bool) -> None:
    start = time.time()
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONUNBUFFERED="1", XLA_PYTHON_CLIENT_PREALLOCATE="false")
    if not smoke:
        env["REPRO_DATA_MIRROR"] = str(_mirror())
        if WHEELS.exists():
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                            "--no-cache-dir", "--upgrade", "--target", "/tmp/site", *map(str, WHEELS.glob("*.whl"))],
                           check=True)
        env["PYTHONPATH"] = os.pathsep.join(["/tmp/site", str(ROOT), env.get("PYTHONPATH", "")])
        subprocess.run(["nvidia-smi", "-L"], check=False)
    out = Path(os.environ.get("OUT", "/tmp/out")) / "fig5"
    profile = "smoke" if smoke else "full"
    cmd = [sys.executable, "-m", "repro", "run", "dpfermi-fig-5", "--profile", profile, "--seeds", "1",
           "--set", "epsilon=10,100", "--set", "lambdas=0,10", "--jobs", "2", "--out", str(out)]
    print("$ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, env=env, cwd=ROOT)
    for compute in sorted(out.glob("dpfermi-fig-5/*/tables/compute.csv")):
        with compute.open() as fh:
            for row in csv.DictReader(fh):
                print(f"ε={row.get('epsilon', '?')} λ={row.get('knob')}: {row.get('images_per_second')} images/s "
                      f"({row.get('models_together', '1')} models together) on {row.get('device')}, "
                      f"{row.get('train_seconds')} s of training")
    print(f"wall: {time.time() - start:.0f} s (data, compile and both trials)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    sub.add_parser("prepare", help="here: split the archive, copy the image list, download the wheels")
    r = sub.add_parser("run", help="on the device machine: rejoin, verify, install, run and print")
    r.add_argument("--smoke", action="store_true", help="the smoke profile on this machine's CPU (wiring only)")
    args = parser.parse_args()
    prepare() if args.step == "prepare" else run(args.smoke)


if __name__ == "__main__":
    main()
