"""The vocabulary of ratings (storage/models.py): the three signals and the emoji that name them."""

from __future__ import annotations

import pytest

from storage.models import REACTIONS, SIGNAL_EMOJI, SIGNALS, signal_for_emoji


@pytest.mark.parametrize(
    ("emoji", "signal"),
    [
        ("👍", "like"),
        ("👍🏽", "like"),
        ("👎", "dislike"),
        ("👎🏻", "dislike"),
        ("🔖", "save"),
        ("🔖\ufe0f", "save"),
        ("❤️", None),
        ("thumbsup", None),
        ("", None),
    ],
)
def test_emoji_maps_to_signal(emoji: str, signal: str | None) -> None:
    """👍 👎 🔖 (any skin tone) are the three ratings; every other emoji is ignored."""
    assert signal_for_emoji(emoji) == signal


def test_every_signal_has_its_emoji_and_the_bot_reacts_with_them_in_that_order() -> None:
    assert tuple(SIGNAL_EMOJI) == SIGNALS
    assert REACTIONS == ("👍", "👎", "🔖")
