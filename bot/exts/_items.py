"""What a press of a button or menu under a message does: each extension answers its own items.

`bot/ui/` makes the items (their look and the state their ``custom_id`` carries); an extension's
``setup`` registers, with :func:`answer`, the handler that runs when one is pressed, on any message of
any age (`discord.ui.DynamicItem`), and the item's `bot.ui.views.Answered.callback` finds it there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import discord

from bot.ui.views import ItemHandler

if TYPE_CHECKING:
    from bot.app import PaperBot


def answer(bot: PaperBot, item: type[discord.ui.DynamicItem[Any]], handler: ItemHandler) -> None:
    """Presses of ``item`` (on any message) run ``handler(interaction, item)``."""
    bot.item_handlers[item] = handler
    bot.add_dynamic_items(item)
