"""An admin is told once per channel that the bot may not add reactions there, after any other notice."""

from __future__ import annotations

from bot.services.admin.permission_notices import PermissionNotices
from storage.db import Database
from storage.repositories.state import StateRepository
from storage.repositories.subscriptions import SubscriptionRepository


async def test_told_once_per_channel_and_kept_after_another_notice(db: Database) -> None:
    subscriptions = SubscriptionRepository(db)
    notices = PermissionNotices(StateRepository(db), subscriptions)
    await subscriptions.set_notice(7, "Your digest is paused.")
    told = await notices.reactions_missing(500, leave_for=7)
    assert told is not None
    assert "<#500>" in told
    assert "**Add Reactions**" in told
    assert await notices.reactions_missing(500, leave_for=7) is None, "once"
    assert await notices.reactions_missing(501) is not None, "another channel is told on its own"
    assert await subscriptions.take_notice(7) == f"Your digest is paused.\n\n{told}"
    assert await subscriptions.take_notice(7) is None
    again = PermissionNotices(StateRepository(db), subscriptions)  # after a restart
    assert await again.reactions_missing(500) is None
