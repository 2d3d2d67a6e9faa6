"""Small operational state in `app_state`: last arXiv fetch, fetch cursors, the command-definition hash."""

from __future__ import annotations

from storage.db import Connection, Database, utcnow


class StateRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, key: str) -> str | None:
        value = await self._db.fetchval("SELECT value FROM app_state WHERE key = ?", (key,))
        return None if value is None else str(value)

    async def get_many(self, prefix: str) -> dict[str, str]:
        """Every key starting with `prefix` (e.g. "arxiv:") and its value."""
        rows = await self._db.fetchall(
            "SELECT key, value FROM app_state WHERE substr(key, 1, ?) = ? ORDER BY key", (len(prefix), prefix)
        )
        return {row[0]: row[1] for row in rows}

    async def set(self, key: str, value: str, *, conn: Connection | None = None) -> None:
        """Store a value; pass `conn` to write inside the caller's transaction."""
        sql = (
            "INSERT INTO app_state (key, value, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"
        )
        params = (key, value, utcnow())
        if conn is not None:
            await conn.execute(sql, params)
        else:
            await self._db.execute(sql, params)

    async def claim(self, key: str, value: str) -> bool:
        """Store a value only if the key has none yet: True for the one caller that stored it."""
        return (
            await self._db.execute(
                "INSERT INTO app_state (key, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
                (key, value, utcnow()),
            )
            > 0
        )

    async def delete(self, key: str, *, conn: Connection | None = None) -> None:
        if conn is not None:
            await conn.execute("DELETE FROM app_state WHERE key = ?", (key,))
        else:
            await self._db.execute("DELETE FROM app_state WHERE key = ?", (key,))
