"""Methods run holding their object's lock: an index is added to in a worker thread while others search."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Concatenate, ParamSpec, Protocol, TypeVar


class Locked(Protocol):
    lock: threading.RLock


_S = TypeVar("_S", bound=Locked)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def locked(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """Run the method holding ``self.lock`` (re-entrant: a locked method may call another)."""

    @functools.wraps(method)
    def wrapper(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.lock:
            return method(self, *args, **kwargs)

    return wrapper
