"""What a person reads in the bot's answer, for `in` checks in end-to-end tests."""

from __future__ import annotations

from bot.sandbox import InteractionResult


def answer_text(result: InteractionResult) -> str:
    """Every message's content, then each embed's title, description and field names and values,
    one per line (unlike ``result.text``, a field's name and value are separate lines)."""
    parts: list[str] = []
    for message in result.messages:
        parts.append(message.content)
        for embed in message.embeds:
            parts.extend([embed.get("title", ""), embed.get("description", "")])
            for field in embed.get("fields", []):
                parts.extend([field["name"], field["value"]])
    return "\n".join(parts)
