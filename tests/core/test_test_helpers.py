"""The shared test helpers tell a user the right fix (issue #24, item 4)."""

from __future__ import annotations

import pytest

from tests.conftest import require_mirror


@pytest.mark.parametrize("value", [None, "relative/mirror-that-does-not-exist"])
def test_mirror_skip_reason_suggests_an_absolute_path(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    monkeypatch.delenv("CI", raising=False)
    if value is None:
        monkeypatch.delenv("REPRO_DATA_MIRROR", raising=False)
    else:
        monkeypatch.setenv("REPRO_DATA_MIRROR", value)
    with pytest.raises(pytest.skip.Exception) as info:
        require_mirror()
    reason = str(info.value)
    assert "REPRO_DATA_MIRROR" in reason and "../" not in reason
    assert "=/" in reason or "(e.g. /" in reason  # the example is an absolute path
