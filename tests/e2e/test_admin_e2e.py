"""End to end: /paperadmin ingest (the bot's operators) with an attached file, /paperadmin stats
(a server's admins, for their own server).

Through the real discord.py client and the local Discord server: the file is uploaded as an
attachment, downloaded by the bot from the attachment URL, ingested with the same parsers as the
CLI, and the new papers are searchable at once. The corpus is shared by every server, so only the
application's owners (or its team's admins and developers) and PAPERBOT_OPERATORS may change it; here
alice (Manage Server) is also listed in PAPERBOT_OPERATORS unless a test says otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import pytest
from answers import answer_text
from shared_data import shared_path

from bot.sandbox import ClientRefused, SandboxServer
from tests.services.papers.ingest.test_ingest_runner import gzip_bomb

if TYPE_CHECKING:
    from paperbot_e2e import E2E

StartBot = Callable[..., contextlib.AbstractAsyncContextManager["E2E"]]
OPERATORS_ONLY = "Only paperbot's operators can load papers from Discord"


@pytest.fixture
async def e2e(start_paperbot: StartBot, sandbox: SandboxServer) -> AsyncIterator[E2E]:
    """The bot with alice, a server admin, also one of its operators (PAPERBOT_OPERATORS)."""
    async with start_paperbot(operator_ids=frozenset({sandbox.alice.id})) as running:
        yield running


async def _paper_count(e2e: E2E) -> int:
    return int(await e2e.db.fetchval("SELECT COUNT(*) FROM papers"))


NEW_PAPERS = [
    {
        "id": "zx-1",
        "title": "Zorblax: Quasitensor Routing for Sparse Mixture Models",
        "abstract": "We introduce zorblax, a quasitensor router for sparse mixtures of experts.",
        "authors": ["Ada Quill", "Ben Root"],
        "venue": "TESTCONF",
        "year": 2026,
    },
    {
        "id": "zx-2",
        "title": "Flumberly Gradients",
        "abstract": "Flumberly gradients stabilise training of very deep quasitensor networks.",
        "authors": ["Cy Dee"],
        "venue": "TESTCONF",
        "year": 2026,
    },
]


@pytest.mark.both_engines
async def test_admin_ingests_an_attached_file_and_its_papers_are_searchable_at_once(e2e: E2E) -> None:
    """added / merged / rejected (with the line and reason), then /paper search finds the new papers."""
    before = await _paper_count(e2e)
    seed = await e2e.db.fetchone(
        "SELECT id, abstract FROM papers WHERE title_derived = 1 ORDER BY id LIMIT 1"
    )
    assert seed is not None, "the shipped corpus has abstract-only papers"
    richer = {
        "id": "zx-3",
        "title": "Plonkwise Attention Is Real",
        "abstract": seed["abstract"],
        "authors": ["E. F."],
    }
    lines = [json.dumps(p) for p in NEW_PAPERS] + [json.dumps(richer), '{"title": "broken", "abstract": ']
    upload = ("zorblax.jsonl", "\n".join(lines) + "\n")

    result = await e2e.server.run_command("alice", "paperadmin ingest", file=upload)

    assert result.ephemeral
    text = result.text
    assert "zorblax.jsonl" in text
    assert re.search(r"added \*\*2\*\*", text), text
    assert re.search(r"merged \*\*1\*\*", text), text
    assert re.search(r"rejected \*\*1\*\*", text), text
    assert "zorblax.jsonl:4: invalid JSON" in text, "the rejected record is named by file and line"
    assert len(result.content) <= 2000
    assert await _paper_count(e2e) == before + 2
    merged = await e2e.db.fetchone("SELECT title, title_derived FROM papers WHERE id = ?", (seed["id"],))
    assert tuple(merged) == ("Plonkwise Attention Is Real", 0), "the richer record filled in the title"

    found = await e2e.server.run_command("bob", "paper search", query="zorblax quasitensor")
    assert "Zorblax: Quasitensor Routing" in answer_text(found)
    found = await e2e.server.run_command("bob", "paper search", query="plonkwise")
    assert "Plonkwise Attention Is Real" in answer_text(found), (
        "the merged paper is re-indexed with its title"
    )


async def test_ingesting_the_same_file_again_changes_nothing(e2e: E2E) -> None:
    upload = ("again.json", json.dumps(NEW_PAPERS))
    first = await e2e.server.run_command("alice", "paperadmin ingest", file=upload)
    assert re.search(r"added \*\*2\*\*", first.text), first.text
    count = await _paper_count(e2e)
    second = await e2e.server.run_command("alice", "paperadmin ingest", file=upload)
    assert re.search(r"added \*\*0\*\*, merged \*\*0\*\*, unchanged 2", second.text), second.text
    assert "Nothing new" in second.text
    assert await _paper_count(e2e) == count


@pytest.mark.parametrize(
    ("upload", "reason"),
    [
        (("broken.json", '[{"title": "a", "abstract": "b"'), "broken.json"),
        (("latin1.txt", "Caf\xe9 papers\n\nAn abstract about caf\xe9s.".encode("latin-1")), "not UTF-8"),
        (("damaged.jsonl.gz", b"\x1f\x8b\x08\x00garbage"), "gzip"),
    ],
)
async def test_a_malformed_file_is_refused_with_a_reason_and_writes_nothing(
    e2e: E2E, upload: tuple[str, Any], reason: str
) -> None:
    before = await _paper_count(e2e)
    result = await e2e.server.run_command("alice", "paperadmin ingest", file=upload)
    assert result.ephemeral
    assert re.search(r"added \*\*0\*\*", result.text), result.text
    assert re.search(r"rejected \*\*1\*\*", result.text), result.text
    assert reason in result.text
    assert await _paper_count(e2e) == before


async def test_many_rejected_records_fit_discord_and_come_as_a_file(e2e: E2E) -> None:
    bad = "\n".join(f'{{"id": "no-text-{i}", "authors": ["Someone"]}}' for i in range(300))
    result = await e2e.server.run_command("alice", "paperadmin ingest", file=("titles.jsonl", bad))
    assert result.ephemeral
    assert len(result.content) <= 2000
    assert re.search(r"rejected \*\*300\*\*", result.text), result.text
    assert "rejected.txt" in result.text
    files = [a for m in result.messages for a in m.attachments if a.filename == "rejected.txt"]
    assert len(files) == 1
    listed = files[0].data.decode().splitlines()
    assert len(listed) > 10
    assert listed[0].startswith("titles.jsonl:1")


async def test_non_admins_cannot_ingest(e2e: E2E) -> None:
    """Hidden from members without Manage Server, and refused by the bot if they get to it anyway."""
    before = await _paper_count(e2e)
    upload = ("sneaky.json", json.dumps(NEW_PAPERS))
    with pytest.raises(ClientRefused):
        await e2e.server.run_command("bob", "paperadmin ingest", file=upload)
    # e.g. an admin opened the command to everyone in Server Settings → Integrations
    result = await e2e.server.run_command("bob", "paperadmin ingest", file=upload, force=True)
    assert result.ephemeral
    assert OPERATORS_ONLY in result.text
    assert await _paper_count(e2e) == before
    stats = await e2e.server.run_command("bob", "paperadmin stats", force=True)
    assert "Manage Server" in stats.text


async def test_a_server_admin_who_is_not_an_operator_is_refused_and_nothing_is_ingested(
    start_paperbot: StartBot,
) -> None:
    """Manage Server runs a server, not the corpus every server shares: alice is told who may load
    papers (naming the application's owner), the file is not even downloaded, nothing is stored."""
    async with start_paperbot() as e2e:
        server = e2e.server
        before = await _paper_count(e2e)
        result = await server.run_command(
            "alice", "paperadmin ingest", file=("ours.json", json.dumps(NEW_PAPERS))
        )
        assert result.ephemeral
        assert OPERATORS_ONLY in result.text
        assert "PAPERBOT_OPERATORS" in result.text
        assert f"<@{server.app_owner.id}>" in result.text
        assert not server.requests_matching("GET /attachments/**"), "the file was downloaded anyway"
        assert await _paper_count(e2e) == before
        found = await server.run_command("bob", "paper search", query="zorblax quasitensor")
        assert "Zorblax" not in answer_text(found)


async def test_the_application_owner_can_ingest(start_paperbot: StartBot) -> None:
    async with start_paperbot() as e2e:
        server = e2e.server
        result = await server.run_command(
            server.app_owner, "paperadmin ingest", file=("owner.json", json.dumps(NEW_PAPERS))
        )
        assert re.search(r"added \*\*2\*\*", result.text), result.text
        found = await server.run_command("bob", "paper search", query="zorblax quasitensor")
        assert "Zorblax: Quasitensor Routing" in answer_text(found)


async def test_a_team_owned_application_lets_its_admins_and_developers_ingest_only(
    start_paperbot: StartBot,
) -> None:
    """Once a team owns the application (while the bot runs): its developer may ingest, a read-only
    member with Manage Server may not, and someone only invited may not either."""
    async with start_paperbot() as e2e:
        server = e2e.server
        server.add_user("dave", manage_guild=True)
        server.add_user("erin", manage_guild=True)
        server.set_application_team(
            "carol", {"bob": "developer", "dave": "read_only"}, invited={"erin": "admin"}
        )
        upload = ("team.json", json.dumps(NEW_PAPERS))
        for refused in ("dave", "erin"):
            result = await server.run_command(refused, "paperadmin ingest", file=upload)
            assert OPERATORS_ONLY in result.text, refused
            assert f"<@{server.carol.id}>" in result.text
            assert f"<@{server.user('bob').id}>" in result.text
        assert await e2e.db.fetchval("SELECT COUNT(*) FROM papers WHERE external_id = 'zx-1'") == 0
        # bob has no Manage Server: the server's admins allowed him the command (Integrations)
        result = await server.run_command("bob", "paperadmin ingest", file=upload, force=True)
        assert re.search(r"added \*\*2\*\*", result.text), result.text


async def test_a_file_over_the_size_limit_is_refused_before_download(
    start_paperbot: Any, sandbox: SandboxServer
) -> None:
    async with start_paperbot(max_ingest_bytes=1024, operator_ids=frozenset({sandbox.alice.id})) as e2e:
        before = await _paper_count(e2e)
        big = json.dumps(NEW_PAPERS * 20)
        assert len(big) > 1024
        result = await e2e.server.run_command("alice", "paperadmin ingest", file=("big.json", big))
        assert result.ephemeral
        assert "big.json" in result.text
        assert "I accept files up to 1 KB" in result.text
        assert not e2e.server.requests_matching("GET /attachments/**"), "the file was downloaded anyway"
        assert await _paper_count(e2e) == before


@contextlib.asynccontextmanager
async def longest_pause() -> AsyncIterator[list[float]]:
    """The longest time the event loop (the bot's and the sandbox's) went without running a task that
    asks every millisecond, over the block: [seconds] once it ends."""
    longest = [0.0]
    loop = asyncio.get_running_loop()

    async def tick() -> None:
        last = loop.time()
        while True:
            await asyncio.sleep(0.001)
            longest[0] = max(longest[0], loop.time() - last)
            last = loop.time()

    ticker = asyncio.create_task(tick())
    try:
        yield longest
    finally:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker


async def test_a_gzip_bomb_is_refused_naming_the_limit_and_the_bot_keeps_answering(
    start_paperbot: Any, sandbox: SandboxServer
) -> None:
    """A 200 KB upload that expands to 200 MB, past a 16 MB PAPERBOT_MAX_DECOMPRESSED_MB: refused with
    the limit named, nothing stored, and meanwhile the bot never stops answering for more than a
    moment (decompressing and parsing run beside the event loop) — bob's search is answered."""
    bomb = gzip_bomb(200)
    assert len(bomb) < 25 * 1024 * 1024 / 100
    async with start_paperbot(
        max_decompressed_bytes=16 * 1024 * 1024, operator_ids=frozenset({sandbox.alice.id})
    ) as e2e:
        before = await _paper_count(e2e)
        async with longest_pause() as paused:
            ingest, search = await asyncio.gather(
                e2e.server.run_command("alice", "paperadmin ingest", file=("papers.json.gz", bomb)),
                e2e.server.run_command("bob", "paper search", query="speculative decoding"),
            )
        assert search.ok
        assert "matched" in search.text
        assert "rejected **1**" in ingest.text
        assert "papers.json.gz: holds more than 16 MB once decompressed" in ingest.text
        assert "PAPERBOT\\_MAX\\_DECOMPRESSED\\_MB" in ingest.text  # (escaped for Markdown)
        assert await _paper_count(e2e) == before
        assert paused[0] < 0.5, f"the bot stopped answering for {paused[0]:.1f} s"


async def test_stats_shows_counts_last_fetch_and_next_digests(e2e: E2E) -> None:
    server = e2e.server
    feed = await server.run_command(
        "alice", "paperadmin feed set", channel="general", topics="language models", time="09:00"
    )
    assert feed.ok, feed.failure

    result = await server.run_command("alice", "paperadmin stats")

    assert result.ephemeral
    embed = result.embed
    assert embed is not None
    fields = {f["name"]: f["value"] for f in embed["fields"]}
    papers = await _paper_count(e2e)
    assert fields["Papers (every server)"].startswith(f"{papers:,} ({papers:,} searchable)")
    assert fields["People here"].startswith("0 rated papers or set up a digest here")
    assert "1 channel feed\n" in fields["Subscriptions here"]
    assert "never" in fields["Last arXiv fetch"]
    assert re.search(r"next <t:\d+:f>", fields["Next digests here"]), fields["Next digests here"]
    assert "1 in the next 24 hours" in fields["Next digests here"]
    assert "the papers are shared by every server" in embed["footer"]["text"]
    general = server.channel("general")
    assert f"<#{general.id}> <t:" in fields["This server's feeds"]


# --- the real corpora of ../shared through Discord ----------------------------------------------------


@pytest.mark.shared
async def test_the_icml_2024_list_through_discord_gives_the_seed_papers_their_titles(e2e: E2E) -> None:
    """Seeds (shipped) + ICML 2024 uploaded as .jsonl.gz = 2,610 papers, none left with a derived title."""
    icml = shared_path("data", "icml2024", "icml2024_papers.jsonl.gz")
    assert await _paper_count(e2e) == 38
    result = await e2e.server.run_command("alice", "paperadmin ingest", file=icml, timeout=60)
    assert re.search(r"added \*\*2572\*\*, merged \*\*38\*\*", result.text), result.text
    assert await _paper_count(e2e) == 2610
    assert await e2e.db.fetchval("SELECT COUNT(*) FROM papers WHERE title_derived = 1") == 0
    assert len(e2e.services.search) == 2610
    stats = await e2e.server.run_command("alice", "paperadmin stats")
    assert stats.embed is not None
    papers = next(f["value"] for f in stats.embed["fields"] if f["name"] == "Papers (every server)")
    assert papers == "2,610 (2,610 searchable)"


@pytest.mark.shared
async def test_arxiv_api_responses_use_the_same_parsers(e2e: E2E) -> None:
    """An arXiv Atom response goes in; the recorded HTTP 400 error feed is refused with its reason."""
    atom = shared_path("data", "arxiv-api", "lukasschwab-arxiv.py-2016", "search_au_del_maestro.xml")
    result = await e2e.server.run_command("alice", "paperadmin ingest", file=atom)
    assert re.search(r"added \*\*10\*\*", result.text), result.text
    error_feed = shared_path(
        "data", "arxiv-api", "lukasschwab-arxiv.py-2026", "id_abc_s0_m100_b79c8dcf6bc3.json"
    )
    before = await _paper_count(e2e)
    refused = await e2e.server.run_command("alice", "paperadmin ingest", file=error_feed)
    assert re.search(r"added \*\*0\*\*", refused.text), refused.text
    assert re.search(r"rejected \*\*1\*\*", refused.text), refused.text
    assert await _paper_count(e2e) == before


async def _rate(e2e: E2E, user: str, where: Any, query: str, emojis: tuple[str, ...]) -> None:
    """`user` posts the best match of `query` with /paper show in `where` and reacts with `emojis`."""
    hits = e2e.services.search.search(query, limit=1).hits
    shown = await e2e.server.run_command(user, "paper show", paper=str(hits[0].paper_id), where=where)
    assert shown.message is not None
    await e2e.server.eventually(lambda: len(shown.message.reactions) == 3, what="the bot's 👍 👎 🔖")
    for emoji in emojis:
        await e2e.server.react(user, shown.message, emoji)


def _stats_fields(result: Any) -> dict[str, str]:
    assert result.ephemeral
    assert result.embed is not None
    return {f["name"]: f["value"] for f in result.embed["fields"]}


@pytest.mark.both_engines
async def test_stats_in_one_server_show_none_of_another_servers_counts(
    start_paperbot: StartBot, sandbox: SandboxServer
) -> None:
    """Two servers share the papers; each server's admins see their own people, subscriptions, feeds,
    reactions and next digests only."""
    other = sandbox.add_guild("Other Lab", members={"carol": True, "dave": False})
    general_b = sandbox.guild_channel(other, "general")
    async with start_paperbot(dev_guild_id=None) as e2e:  # global commands: usable in both servers
        server = e2e.server
        # Paper Lab: bob subscribes and likes one paper
        await server.run_command("bob", "paper subscribe", topics="language models", time="10:00")
        await _rate(e2e, "bob", "papers", "quantization", ("👍",))
        # Other Lab: a feed, dave's digest, three ratings by two people
        feed = await server.run_command(
            "carol",
            "paperadmin feed set",
            channel="general",
            topics="diffusion",
            time="08:00",
            where=general_b,
        )
        assert feed.ok, feed.failure
        await server.run_command("dave", "paper subscribe", topics="robotics", time="07:00", where=general_b)
        await _rate(e2e, "dave", general_b, "diffusion", ("👍", "🔖"))
        await _rate(e2e, "carol", general_b, "reinforcement learning", ("👎",))
        await server.eventually(
            _count_is(e2e, "SELECT COUNT(*) FROM feedback", 4), what="all 4 ratings stored"
        )

        here = _stats_fields(await server.run_command("alice", "paperadmin stats"))
        papers = await _paper_count(e2e)
        assert here["Papers (every server)"].startswith(f"{papers:,} (")
        assert here["People here"] == "1 rated papers or set up a digest here\n1 reaction or save"
        assert here["Subscriptions here"] == "1 DM digest\n0 channel feeds\n0 paused"
        assert "1 in the next 24 hours" in here["Next digests here"]
        assert "This server's feeds" not in here

        there = _stats_fields(await server.run_command("carol", "paperadmin stats", where=general_b))
        assert there["People here"] == "2 rated papers or set up a digest here\n3 reactions and saves"
        assert there["Subscriptions here"] == "1 DM digest\n1 channel feed\n0 paused"
        assert "2 in the next 24 hours" in there["Next digests here"]
        assert f"<#{general_b.id}>" in there["This server's feeds"]
        assert there["Papers (every server)"] == here["Papers (every server)"]


def _count_is(e2e: E2E, sql: str, expected: int) -> Callable[[], Any]:
    async def check() -> bool:
        return bool(await e2e.db.fetchval(sql) == expected)

    return check
