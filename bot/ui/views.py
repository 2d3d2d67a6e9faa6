"""Rating buttons whose custom_id carries their state, so they keep working after a restart (the paging
button of a result list is in `bot.ui.listing`), and `Answered`: how every button and menu under a
message finds what its press does. `bot/ui/` renders; what a press does (a service called, a write) is
the handler an extension registers for the item's class (`bot.exts._items.answer`)."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import discord

from bot.services.people.feedback import parse_signal
from bot.tree import report_error
from storage.models import SIGNAL_EMOJI, SIGNALS, Signal

log = logging.getLogger(__name__)

#: what a press of an item does: called with the interaction and the item (its state parsed)
ItemHandler = Callable[[discord.Interaction[Any], Any], Awaitable[None]]


class Answered:
    """A button or menu whose press is answered by the handler an extension registered on the client
    for its class (``client.item_handlers``, in the extension's ``setup``): ui only renders it."""

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        handlers: Mapping[type, ItemHandler] = getattr(interaction.client, "item_handlers", {})
        handler = handlers.get(type(self))
        if handler is None:
            raise RuntimeError(f"no extension answers {type(self).__name__}")
        await handler(interaction, self)


BUTTONS_PER_ROW = 5


async def report_item_error(
    interaction: discord.Interaction[Any], error: Exception, what: str, *, detail: str | None = None
) -> None:
    """A button or menu failed: as a failed command is answered (logged here, under bot.ui.views;
    ``detail``, the paper or topic it was pressed for, at DEBUG only)."""
    await report_error(interaction, error, what, detail=detail, logger=log)


def secondary_button(*, label: str, emoji: str, custom_id: str) -> discord.ui.Button[Any]:
    """A grey button with an emoji and a label: what the `DynamicItem`s under a message wrap."""
    return discord.ui.Button(
        style=discord.ButtonStyle.secondary, emoji=emoji, label=label, custom_id=custom_id
    )


class RateButton(
    Answered,
    discord.ui.DynamicItem[discord.ui.Button[Any]],
    template=rf"pb:(?P<signal>{'|'.join(SIGNALS)}):(?P<paper>\d+)",
):
    """👍 / 👎 / 🔖 for one paper (of a result list, or of a message showing one paper); pressing again
    takes it back."""

    def __init__(
        self, signal: Signal, paper_id: int, *, label: str | None = None, row: int | None = None
    ) -> None:
        self.signal = signal
        self.paper_id = paper_id
        super().__init__(
            discord.ui.Button(
                style=discord.ButtonStyle.secondary,
                emoji=SIGNAL_EMOJI[signal],
                label=label,
                custom_id=f"pb:{signal}:{paper_id}",
                row=row,
            )
        )

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> RateButton:
        return cls(parse_signal(match["signal"]), int(match["paper"]), label=getattr(item, "label", None))


def rating_legend(papers: int) -> str:
    """What :func:`add_rating_buttons` gives ``papers`` listed papers, said in a footer."""
    if papers <= BUTTONS_PER_ROW:
        return "buttons: 👍 more like this · 👎 fewer like this · 🔖 save — numbers match the list"
    return (
        "buttons: 👍 more like this · 🔖 save — numbers match the list"
        f" (👎 buttons too when {BUTTONS_PER_ROW} or fewer are listed)"
    )


def add_rating_buttons(view: discord.ui.View, paper_ids: Sequence[int], *, first_number: int) -> None:
    """Numbered buttons, a column per listed paper: a 👍 row, a 👎 row and a 🔖 row for up to five
    papers; beyond five, two 👍 rows and two 🔖 rows (Discord allows 25 buttons)."""
    numbers = list(enumerate(paper_ids, first_number))
    layout: list[tuple[Signal, list[tuple[int, int]]]]
    if len(numbers) <= BUTTONS_PER_ROW:
        layout = [("like", numbers), ("dislike", numbers), ("save", numbers)]
    else:
        first, rest = numbers[:BUTTONS_PER_ROW], numbers[BUTTONS_PER_ROW:]
        layout = [("like", first), ("like", rest), ("save", first), ("save", rest)]
    for row, (signal, chunk) in enumerate(layout):
        for number, paper_id in chunk:
            view.add_item(RateButton(signal, paper_id, label=str(number), row=row))


def paper_buttons(paper_id: int, others: discord.ui.View | None = None) -> discord.ui.View:
    """The buttons of a message that shows one paper: its own 👍 👎 🔖 (sent with the message, no
    reaction to add afterwards, answered privately), then ``others`` it already has."""
    view = discord.ui.View(timeout=None)
    for signal in SIGNAL_EMOJI:
        view.add_item(RateButton(signal, paper_id))
    for item in others.children if others is not None else ():
        view.add_item(item)
    return view
