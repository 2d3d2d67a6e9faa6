"""`python -m bot run` as a real process against the sandbox, its log read as it comes (tests that stop
or kill the bot: test_shutdown.py, test_processes_e2e.py)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

from bot.sandbox import SandboxServer
from storage.store import StoreLocation

READY_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0


class BotProcess:
    """`python -m bot run` in a subprocess, its stderr collected line by line as it comes."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self.stdout = ""
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(
        cls, server: SandboxServer, store: Path | StoreLocation, cwd: Path, **settings: str
    ) -> BotProcess:
        """`paperbot run` on `store` against `server`; `settings`: more variables (PAPERBOT_ROLE=...)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PAPERBOT_", "DISCORD_"))}
        path = store if isinstance(store, Path) else store.path
        if path is not None:  # the store's folder, as a deployment provides it (paperbot run makes none)
            path.parent.mkdir(parents=True, exist_ok=True)
        env.update(
            DISCORD_TOKEN=server.token,
            DISCORD_API_BASE=server.api_base,
            DISCORD_GATEWAY_URL=server.gateway_url,
            PAPERBOT_DB=str(store) if isinstance(store, Path) else (store.url or str(store.path)),
            PAPERBOT_LOG_LEVEL="INFO",
            **settings,
        )
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "run",
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return cls(process)

    async def _read(self) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            self.lines.append(line.decode("utf-8", "replace").rstrip("\n"))
            self._changed.set()
        assert self.process.stdout is not None
        self.stdout = (await self.process.stdout.read()).decode("utf-8", "replace")
        self._changed.set()

    @property
    def log(self) -> str:
        return "\n".join(self.lines)

    async def wait_for(self, pattern: str, timeout: float = READY_TIMEOUT) -> str:  # noqa: ASYNC109
        """The first log line matching `pattern`; fails with the log if it does not come."""
        regex = re.compile(pattern)

        async def find() -> str:
            while True:
                for line in self.lines:
                    if regex.search(line):
                        return line
                if self._reader.done():
                    raise AssertionError(f"paperbot exited before logging {pattern!r}:\n{self.log}")
                self._changed.clear()
                await self._changed.wait()

        try:
            return await asyncio.wait_for(find(), timeout)
        except TimeoutError:
            raise AssertionError(f"no {pattern!r} within {timeout:.0f} s:\n{self.log}") from None

    async def stop(self, sig: int = signal.SIGTERM) -> int:
        self.process.send_signal(sig)
        try:
            code = await asyncio.wait_for(self.process.wait(), STOP_TIMEOUT)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
            raise AssertionError(f"paperbot did not stop within {STOP_TIMEOUT:.0f} s:\n{self.log}") from None
        await self._reader
        return code

    async def kill(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        await self._reader

    @property
    def pid(self) -> int:
        return self.process.pid
