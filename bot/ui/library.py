"""The answer to `/paper interests add file:`: what a library gave, in one message within Discord's limit."""

from __future__ import annotations

from bot.services.people.library import SHOWN_NOT_UNDERSTOOD, LibraryImport
from bot.services.search.snippets import echo
from bot.ui.embeds import CONTENT_LIMIT
from bot.ui.format import trim

SHOWN_MISSING = 3


def library_answer(done: LibraryImport) -> str:
    match = done.match
    plural = "y" if match.entries == 1 else "ies"
    lines = [f"Your {match.format} file: {match.entries:,} entr{plural}."]
    found = len(match.papers)
    if found:
        fetched = f" ({match.fetched} fetched from arXiv just now)" if match.fetched else ""
        have = "is a paper" if found == 1 else "are papers"
        lines.append(f"📚 {found:,} of them {have} I have{fetched}.")
    if done.paused:
        lines.append(
            "Learning is paused, so none of them counts yet: turn it back on with `/paper interests pause`, "
            "then add the file again."
        )
    elif found:
        already = f" ({done.already:,} you had liked already)" if done.already else ""
        one = done.liked == 1
        counts, them = ("now counts as a paper", "it") if one else ("now count as papers", "them")
        lines.append(
            f"👍 {done.liked:,} {counts} you like{already}: `/paper recommend` and your digest "
            f"start from {them}, each group of related papers an interest of its own."
        )
    if done.learned:
        titles = [echo(trim(e.title, 60)) for e in done.learned[:SHOWN_MISSING]]
        more = f" and {len(done.learned) - SHOWN_MISSING:,} more" if len(done.learned) > SHOWN_MISSING else ""
        kept = (
            f" ({len(done.learned) - done.learned_new:,} kept from before)"
            if done.learned_new < len(done.learned)
            else ""
        )
        lines.append(
            f"📖 Learned from their own text ({len(done.learned):,}, not here{kept}): "
            + "; ".join(f"“{t}”" for t in titles)
            + more
            + ". Their titles and abstracts teach your picks and are kept for you alone: no one can search "
            "or be sent them. `/paper forget-me` deletes them."
        )
    not_here = done.not_here
    if not_here:
        titles = [echo(trim(e.title or ", ".join(e.ids), 60)) for e in not_here[:SHOWN_MISSING]]
        more = f" and {len(not_here) - SHOWN_MISSING:,} more" if len(not_here) > SHOWN_MISSING else ""
        lines.append(f"Not here ({len(not_here):,}): " + "; ".join(f"“{t}”" for t in titles) + more + ".")
    if match.unfetched:
        lines.append(
            f"{match.unfetched:,} entr{'y has' if match.unfetched == 1 else 'ies have'} an arXiv id I could not "
            "fetch now (arXiv unreachable, or more than 20 in one file): add the file again later to fetch them."
        )
    if match.not_understood:
        listed = "; ".join(
            f"line {line}: “{echo(what)}”" for line, what in match.not_understood[:SHOWN_NOT_UNDERSTOOD]
        )
        rest = len(match.not_understood) - SHOWN_NOT_UNDERSTOOD
        lines.append(
            f"Not understood ({len(match.not_understood):,}): {listed}"
            + (f" and {rest:,} more" if rest > 0 else "")
            + "."
        )
    return trim("\n".join(lines), CONTENT_LIMIT)
