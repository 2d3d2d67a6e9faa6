"""PostgreSQL stores for tests: a throwaway database per test session, an empty schema per store.

The server: `PAPERBOT_TEST_POSTGRES` names a database the tests may fill and empty (`.ci/run` creates
a uniquely named one and drops it afterwards); without it, the local server
(`postgresql://postgres@127.0.0.1:5432/postgres`) is tried and a uniquely named database created on
it for the session, dropped at its end. With neither, PostgreSQL tests skip with the reason — or,
under CI (`CI=true`), fail: CI must run every test on both engines.

Each store is a schema of its own in that database (its URL sets `search_path`), so a test starts on
a freshly migrated, empty store and may open as many connections or processes on it as it likes.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

if TYPE_CHECKING:
    from storage.store import StoreLocation

T = TypeVar("T")

#: the engines a store-taking test runs on (the parameters of the `store` fixture)
ENGINES = ("sqlite", "postgresql")
LOCAL_SERVER = "postgresql://postgres@127.0.0.1:5432/postgres"
ENV = "PAPERBOT_TEST_POSTGRES"


def unavailable(reason: str) -> None:
    """Skip (a fresh clone without PostgreSQL), or fail under CI."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI runs every test on PostgreSQL too, but {reason}", pytrace=False)
    pytest.skip(f"needs a PostgreSQL server: {reason} (set {ENV}, or run one on 127.0.0.1:5432)")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to its end on an event loop of its own (the session fixture may be set up from
    inside a test's running loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


async def _reachable(url: str) -> str | None:
    try:
        conn = await asyncpg.connect(url, timeout=5)
    except (OSError, asyncpg.PostgresError, TimeoutError) as error:
        return f"{urlsplit(url).netloc} is unreachable ({type(error).__name__}: {error})"
    await conn.close()
    return None


def session_database() -> Iterator[str]:
    """The URL of the session's database (a generator: the database it created is dropped after)."""
    given = os.environ.get(ENV)
    if given:
        problem = _run(_reachable(given))
        if problem:
            unavailable(f"{ENV}={given}: {problem}")
        yield given
        return
    problem = _run(_reachable(LOCAL_SERVER))
    if problem:
        unavailable(problem)
    name = f"paperbot_test_{os.getpid()}_{secrets.token_hex(4)}"
    _run(_admin(LOCAL_SERVER, f'CREATE DATABASE "{name}"'))
    try:
        yield _with_database(LOCAL_SERVER, name)
    finally:
        _run(_admin(LOCAL_SERVER, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _admin(url: str, sql: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def store_url(database_url: str, schema: str) -> str:
    """The URL of the store in `schema` of that database."""
    parts = urlsplit(database_url)
    query = "&".join(q for q in (parts.query, f"search_path={schema}") if q)
    return urlunsplit(parts._replace(query=query))


def with_password(store: StoreLocation, password: str, *, in_parameter: bool) -> str:
    """The URL of `store` with a password (the local test server trusts any), in its user part or in a
    `password=` parameter."""
    assert store.url is not None
    if in_parameter:
        return f"{store.url}&password={password}"
    scheme, _, rest = store.url.partition("://")
    user, _, server = rest.partition("@")
    return f"{scheme}://{user.partition(':')[0]}:{password}@{server}"


#: Schemas migrated to the latest version and emptied after their test, for the next test to take:
#: emptying one takes milliseconds, where creating and migrating one takes a third of a second.
_reusable: list[str] = []


async def create_store(database_url: str, *, migrated: bool = True) -> tuple[str, str]:
    """An empty store: (its schema, its URL). Migrated (a schema an earlier test left, emptied) unless
    `migrated=False` (a new schema with nothing in it, dropped after)."""
    from storage.store import open_database

    if migrated and _reusable:
        schema = _reusable.pop()
        return schema, store_url(database_url, schema)
    schema = f"store_{secrets.token_hex(6)}"
    await _admin(database_url, f"CREATE SCHEMA {schema}")
    url = store_url(database_url, schema)
    if migrated:
        await (await open_database(url)).close()
    return schema, url


async def drop_store(database_url: str, schema: str) -> None:
    """Done with the store: emptied for the next test when it is still a migrated store like any other
    (same version, the same tables), else dropped."""
    from storage.migrate import available_migrations

    conn = await asyncpg.connect(database_url)
    try:
        latest = len(available_migrations("postgresql"))
        version = await conn.fetchval(f"SELECT to_regclass('{schema}.schema_version') IS NOT NULL")
        if version:
            version = await conn.fetchval(f"SELECT version FROM {schema}.schema_version")
        if version == latest and await _empty(conn, schema):
            _reusable.append(schema)
        else:
            await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        await conn.close()


async def _empty(conn: asyncpg.Connection, schema: str) -> bool:
    """Delete every row (children before parents) and restart the ids, as in a new store; False when
    the tables are not those of a store (a test changed them)."""
    tables = {
        str(r[0]) for r in await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = $1", schema)
    } - {"schema_version"}
    parents: dict[str, set[str]] = {table: set() for table in tables}
    for child, parent in await conn.fetch(
        "SELECT c.relname, p.relname FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid "
        "JOIN pg_class p ON p.oid = k.confrelid WHERE k.contype = 'f' AND k.connamespace = $1::regnamespace",
        schema,
    ):
        if child in parents and child != parent:
            parents[child].add(parent)
    order: list[str] = []
    while len(order) < len(tables):
        # a table goes once nothing still to delete refers to it
        ready = [
            t
            for t in tables
            if t not in order and not any(t in parents[o] for o in tables - set(order) - {t})
        ]
        if not ready:
            return False
        order.extend(sorted(ready))
    identities = await conn.fetch(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = $1 AND is_identity = 'YES'",
        schema,
    )
    statements = [f"DELETE FROM {schema}.{table}" for table in order]
    statements += [
        f"ALTER TABLE {schema}.{table} ALTER COLUMN {column} RESTART" for table, column in identities
    ]
    statements.append(
        f"INSERT INTO {schema}.paper_changes (id, seq, store_id) VALUES (1, 0, md5(random()::text))"
    )
    await conn.execute("; ".join(statements))
    return True
