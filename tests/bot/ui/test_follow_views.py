"""`bot/ui/follow_views.py`: a follow's answer, its menu and the list of follows fit Discord's limits
however many groups a name has and however long its co-authors' names are (checked by the sandbox's
own validator of a message body, the rules the local Discord refuses a message by)."""

from __future__ import annotations

from typing import Any

import discord

from bot.sandbox.emulator import limits
from bot.services.people.authors import AuthorGroup
from bot.services.people.follows import AuthorSuggestion, Followed, FollowOutcome
from bot.ui.follow_views import follow_answer, following_embed, suggestion_label

LONG = "Maximiliana Wilhelmina " * 6  # a name of 138 characters


def _group(n: int) -> AuthorGroup:
    return AuthorGroup(
        paper_id=n,
        paper_ids=frozenset(range(n, n + 3)),
        coauthors=(f"{LONG}{n}", f"Second {LONG}", "Third Person"),
        venues=(f"Conference on Very Long Names {n}", "Workshop"),
        years=(2001, 2026),
    )


def _message(answer: dict[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = {"content": answer["content"]}
    if "embed" in answer:
        payload["embeds"] = [answer["embed"].to_dict()]
    if "view" in answer:
        payload["components"] = answer["view"].to_components()
    return payload


def test_a_name_of_many_groups_gets_an_answer_and_menu_discord_takes() -> None:
    groups = tuple(_group(n * 10) for n in range(1, 41))
    for outcome in (
        FollowOutcome("Wei Wang", "wei wang", chosen=(), groups=groups, has_digest=False),
        FollowOutcome(
            "Wei Wang", "wei wang", chosen=groups[:30], groups=groups, replaced=(), has_digest=False
        ),
    ):
        answer = follow_answer(outcome)
        assert limits.validate_message(_message(answer)).describe() == ""
        (menu,) = answer["view"].children
        assert isinstance(menu.item, discord.ui.Select)
        assert len(menu.item.options) == 25, "as many groups as a menu holds"
        assert answer["embed"].title == "40 authors may share the name Wei Wang"
        assert "… and 30 more groups (in the menu)" in answer["embed"].description
    assert (
        "and 27 more groups"
        in follow_answer(FollowOutcome("Wei Wang", "wei wang", chosen=groups[:30], groups=groups))["content"]
    )


def test_a_name_too_long_for_a_menu_id_gets_the_answer_without_one() -> None:
    key = "x" * 95
    answer = follow_answer(FollowOutcome(key, key, chosen=(), groups=(_group(1), _group(10))))
    assert "view" not in answer
    assert limits.validate_message(_message(answer)).describe() == ""


def test_labels_and_the_list_of_follows_fit() -> None:
    label = suggestion_label(AuthorSuggestion("Wei Wang (#10)", "Wei Wang", 3, group=_group(10), groups=2))
    assert len(label) <= 100
    assert label.startswith("Wei Wang — with Maximiliana")
    follows = [
        Followed(f"{LONG}{n}", n, _group(n).describe(), "2026-03-01T09:00:00+00:00") for n in range(50)
    ]
    embed = following_embed(follows, 50)
    assert limits.validate_message({"embeds": [embed.to_dict()]}).describe() == ""
    assert embed.title == "Authors you follow (50 of 50)"
