"""Research data kept beside the repository in ``../shared/`` (not shipped with paperbot).

Tests that read it call :func:`shared_path`, which skips the test with a clear reason when the data is
absent (a user's fresh clone). Importable from every test module: pytest puts ``tests/`` on the path
for ``tests/conftest.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared_path(*parts: str) -> Path:
    """A file under ../shared/, or skip: a fresh clone has no research data beside it."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"needs ../shared/{'/'.join(parts)} (research data kept beside the repo, not shipped)")
    return path
