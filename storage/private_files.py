"""Files that hold what people did (the SQLite store, the outbox, backups): readable by their owner only.

The systemd unit in deploy/ runs paperbot with UMask=0027; started any other way (Docker, a shell)
the umask is usually 022, which would leave a new file readable by every user of the machine. So
these files are created 0600 and the folders paperbot creates for them 0700, whatever the umask (a
umask only ever takes permissions away). SQLite creates a database's -wal and -shm files with the
database file's own permissions, so creating the database file first covers them too. Files and
folders that already exist keep the permissions their owner gave them.
"""

from __future__ import annotations

import os
from pathlib import Path

OWNER_ONLY_FILE = 0o600
OWNER_ONLY_FOLDER = 0o700


def make_private_folders(folder: Path) -> None:
    """Create `folder` and any of its missing parents, each owner-only."""
    for path in reversed([p for p in (folder, *folder.parents) if not p.exists()]):
        path.mkdir(mode=OWNER_ONLY_FOLDER, exist_ok=True)  # (another process may make it meanwhile)


def create_private_file(path: Path) -> None:
    """Create `path` empty and owner-only unless it exists (its missing folders owner-only too)."""
    if str(path) == ":memory:":
        return
    make_private_folders(path.parent)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, OWNER_ONLY_FILE)
    except FileExistsError:
        return
    os.close(descriptor)
