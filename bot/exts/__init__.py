"""One extension per feature; modules starting with "_" are helpers, not extensions."""

from __future__ import annotations

import pkgutil


def discover_extensions() -> list[str]:
    return sorted(
        f"{__name__}.{module.name}"
        for module in pkgutil.iter_modules(__path__)
        if not module.name.startswith("_")
    )
