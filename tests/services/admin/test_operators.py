"""Who operates the bot: the application's owner, or its team's owner, admins and developers who
accepted, plus PAPERBOT_OPERATORS."""

from __future__ import annotations

from bot.services.admin.operators import ApplicationOwnership, TeamMember, operators_of

ALICE, BOB, CAROL, DAVE, ERIN = 1, 2, 3, 4, 5


def test_a_user_owned_application_is_operated_by_its_owner_and_the_configured_ids() -> None:
    operators = operators_of(ApplicationOwnership(owner_id=ALICE), configured={BOB})
    assert operators.allows(ALICE)
    assert operators.allows(BOB)
    assert not operators.allows(CAROL)
    assert operators.ids() == [ALICE, BOB]


def test_a_team_owned_application_counts_accepted_admins_and_developers_and_the_team_owner() -> None:
    team = ApplicationOwnership(
        owner_id=None,
        team_owner_id=ALICE,
        team_members=(
            TeamMember(BOB, "developer", accepted=True),
            TeamMember(CAROL, "read_only", accepted=True),
            TeamMember(DAVE, "admin", accepted=False),
            TeamMember(ERIN, "admin", accepted=True),
        ),
    )
    operators = operators_of(team, configured=())
    assert [user for user in (ALICE, BOB, CAROL, DAVE, ERIN) if operators.allows(user)] == [ALICE, BOB, ERIN]


def test_without_application_info_only_the_configured_ids_operate() -> None:
    operators = operators_of(None, configured={CAROL, ALICE})
    assert operators.ids() == [ALICE, CAROL]
    assert not operators.allows(BOB)
    assert operators_of(None, configured=()).ids() == []
