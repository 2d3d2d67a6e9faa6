"""Items under a message render in bot/ui; what a press does is the handler an extension registered."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from bot.ui.views import RateButton, paper_buttons


async def test_a_press_runs_the_handler_registered_for_the_items_class() -> None:
    pressed: list[tuple[str, int]] = []

    async def handler(interaction: Any, button: RateButton) -> None:
        pressed.append((button.signal, button.paper_id))

    interaction: Any = SimpleNamespace(client=SimpleNamespace(item_handlers={RateButton: handler}))
    await RateButton("dislike", 42).callback(interaction)
    assert pressed == [("dislike", 42)]


async def test_an_item_no_extension_answers_says_so() -> None:
    interaction: Any = SimpleNamespace(client=SimpleNamespace(item_handlers={}))
    with pytest.raises(RuntimeError, match="no extension answers RateButton"):
        await RateButton("like", 1).callback(interaction)


def test_a_papers_own_buttons_are_its_three_ratings() -> None:
    view = paper_buttons(7)
    assert [item.item.custom_id for item in view.children] == ["pb:like:7", "pb:dislike:7", "pb:save:7"]  # type: ignore[attr-defined]
