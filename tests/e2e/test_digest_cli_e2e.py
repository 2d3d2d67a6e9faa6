"""`paperbot digest --user ID` run by an operator in another process, beside the running bot.

The command sends the user's digest by DM through Discord's REST API (the sandbox here), exactly as
`/paper digest` would: header, one message per paper with 👍 👎 🔖, recorded so that the running bot
learns from a reaction on them and never sends the same paper again.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from paperbot_e2e import E2E


async def run_cli(e2e: E2E, cwd: Path, *argv: str) -> tuple[int, str, str]:
    """`paperbot ARGV…` in a child process with the running bot's database and Discord settings."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PAPERBOT_", "DISCORD_"))},
        "PAPERBOT_DB": str(e2e.settings.store.path),
        "DISCORD_TOKEN": e2e.server.token,
        "DISCORD_API_BASE": e2e.server.api_base,
        "DISCORD_GATEWAY_URL": e2e.server.gateway_url,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *argv,
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=90)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_operator_sends_a_users_digest_from_the_command_line(e2e: E2E, tmp_path: Path) -> None:
    """Bob subscribed (the bot opened his DM then); `paperbot digest --user BOB` DMs him a header and 2
    papers, each with its 👍 👎 🔖 buttons, straight to the stored DM; his 👍 press on one is learned by the
    running bot; a second run sends 2 other papers."""
    server = e2e.server
    bob = server.bob
    await server.run_command("bob", "paper subscribe", topics="reinforcement learning", count=2)
    await server.eventually(
        lambda: e2e.db.fetchval("SELECT dm_channel_id FROM users WHERE id = ?", (bob.id,)),
        what="bob's DM channel kept at subscribe time",
    )

    code, out, err = await run_cli(e2e, tmp_path, "digest", "--user", str(bob.id))
    assert code == 0, err
    assert out.strip() == f"sent user {bob.id} their digest by DM: 2 papers"
    dms = server.dm_messages("bob")
    papers = [m for m in dms if m.embeds]
    assert len(papers) == 2
    assert "(on demand)" in next(m for m in dms if not m.embeds).content
    for message in papers:
        assert [b["emoji"]["name"] for b in message.buttons][:3] == ["👍", "👎", "🔖"]
        assert message.author is server.bot_user
    assert len(server.requests_matching("POST /users/@me/channels")) == 1, "the CLI used the stored DM"

    first = await e2e.services.messages.paper_for(papers[0].id)
    assert first is not None, "the DM was not recorded, so a reaction on it would teach nothing"
    pressed = await server.click("bob", papers[0], "👍")
    assert pressed.ephemeral
    await server.eventually(
        lambda: e2e.db.fetchval(
            "SELECT COUNT(*) FROM feedback WHERE user_id = ? AND paper_id = ? AND signal = 'like'",
            (bob.id, first),
        ),
        what="bob's 👍 press on the CLI-sent paper, stored by the running bot",
    )

    code, out, err = await run_cli(e2e, tmp_path, "digest", "--user", str(bob.id))
    assert code == 0, err
    papers = [m for m in server.dm_messages("bob") if m.embeds]
    assert len(papers) == 4
    sent = [await e2e.services.messages.paper_for(m.id) for m in papers]
    assert len(set(sent)) == 4, "a paper was sent twice"


async def test_a_user_with_closed_dms_is_reported_and_the_command_exits_1(e2e: E2E, tmp_path: Path) -> None:
    """Carol closed her DMs: nothing is sent, the command says why and exits 1, her digest is paused."""
    server = e2e.server
    await server.run_command("carol", "paper subscribe", topics="diffusion", count=2)
    server.close_dms(server.carol)
    code, out, err = await run_cli(e2e, tmp_path, "digest", "--user", str(server.carol.id))
    assert code == 1
    assert out == ""
    assert "does not accept DMs" in err
    assert server.dm_messages("carol") == []
    sub = await e2e.services.digests.subscriptions.for_user(server.carol.id)
    assert sub is not None
    assert not sub.active
