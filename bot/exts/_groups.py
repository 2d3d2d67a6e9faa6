"""The two top-level slash-command groups; each feature extension adds its commands to them."""

from __future__ import annotations

import discord
from discord import app_commands

paper = app_commands.Group(name="paper", description="Find, follow and rate research papers")
interests = app_commands.Group(
    name="interests", description="See and steer what paperbot learned about you", parent=paper
)
paperadmin = app_commands.Group(
    name="paperadmin",
    description="Server set-up for paperbot: channel feeds, stats; loading papers (bot operators)",
    # Hidden from members without Manage Server (server admins can change who sees them);
    # each command also checks the permission when it runs.
    default_permissions=discord.Permissions(manage_guild=True),
    guild_only=True,
)
feed = app_commands.Group(name="feed", description="A channel's own paper feed", parent=paperadmin)

TOP_LEVEL = (paper, paperadmin)
