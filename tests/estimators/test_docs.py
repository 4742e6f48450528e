"""The three lines of ``docs/estimators.md`` run as written (small settings injected through ``X, y, s``)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

DOC = Path(__file__).parents[2] / "docs" / "estimators.md"


def test_the_documented_three_lines_run_and_give_a_guarantee():
    code = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S).group(1)
    assert len(code.strip().splitlines()) == 3
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    s = (rng.random(300) < 0.4).astype(int)
    y = (X[:, 0] + s > 0.3).astype(int)
    namespace = {"X": X, "y": y, "s": s, "X_test": X[:20]}
    exec(compile(code.replace("random_state=0)", "random_state=0, epochs=2)"), str(DOC), "exec"), namespace)
    clf = namespace["clf"]
    assert clf.predict(X[:20]).shape == (20,)
    assert clf.privacy_guarantee_.describe().startswith("ε = 1 ")


def test_repro_exposes_the_estimators_lazily():
    """``import repro`` loads neither the estimators nor scikit-learn; ``repro.DPFermiClassifier`` does."""
    import subprocess
    import sys

    code = ("import sys, repro; before = 'repro.estimators' in sys.modules or 'sklearn' in sys.modules; "
            "from repro.estimators import __all__ as names; "
            "assert all(getattr(repro, n) is getattr(repro.estimators, n) for n in names); "
            "assert set(names) == set(repro._ESTIMATORS); print(before)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[2])
    assert out.stdout.strip() == "False"
