"""The layers stay apart where an import contract cannot say it: SQL stays in storage, no two modules import
each other, and the Discord emulator stands alone. (Which package may import which is in pyproject.toml's
[tool.importlinter] contracts, checked by `lint-imports` in .ci/run.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(path: Path, root: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``path`` imports when it runs: at the top or inside a function
    (an import moved into a function still closes a loop), not under ``if TYPE_CHECKING:``.
    ``from package import module`` counts as importing that module."""
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    visit_one(other)
            else:
                visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                found.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module)
        visit(node)

    visit(ast.parse(path.read_text("utf-8"), filename=str(path)))
    return found & modules


def import_cycles(paths: list[Path], root: Path = REPO) -> list[list[str]]:
    """Groups of modules that import each other, directly or round a loop (Tarjan's strongly
    connected components of the import graph)."""
    modules = {_module_name(path, root): path for path in paths}
    graph = {name: _runtime_imports(path, root, set(modules)) for name, path in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group: list[str] = []
            while not group or group[-1] != node:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1 or node in graph[node]:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return cycles


def _modules(*folders: Path) -> list[Path]:
    return sorted(path for folder in folders for path in folder.rglob("*.py"))


@pytest.mark.parametrize(
    "path", _modules(REPO / "bot" / "exts", REPO / "bot" / "ui"), ids=lambda p: str(p.relative_to(REPO))
)
def test_discord_code_holds_no_sql(path: Path) -> None:
    text = path.read_text("utf-8")
    for keyword in ("SELECT ", "INSERT INTO", "DELETE FROM", "UPDATE ", "CREATE TABLE"):
        assert keyword not in text, (
            f"{path.relative_to(REPO)} has SQL ({keyword.strip()}); move it to storage/"
        )


def test_no_import_cycles_in_bot_storage_and_the_engine() -> None:
    cycles = import_cycles(_modules(REPO / "bot", REPO / "storage", REPO / "paperindex"))
    assert not cycles, "modules that import each other (imports under TYPE_CHECKING aside): " + "; ".join(
        " ⇄ ".join(cycle) for cycle in cycles
    )


def test_the_cycle_check_sees_a_loop_closed_inside_a_function(tmp_path: Path) -> None:
    """The check itself: a loop through an import inside a function counts, one under TYPE_CHECKING not."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def later():\n    from pkg.a import thing\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import d\n"
    )
    (package / "d.py").write_text("from . import c\n")
    assert import_cycles(sorted(package.glob("*.py")), root=tmp_path) == [["pkg.a", "pkg.b"]]


EMULATOR = REPO / "bot" / "sandbox" / "emulator"


def _all_imports(path: Path) -> list[tuple[int, str]]:
    """(level, module) of every import in ``path``, TYPE_CHECKING ones too (level 0: absolute)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((0, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
    return found


@pytest.mark.parametrize("path", _modules(EMULATOR), ids=lambda p: str(p.relative_to(REPO)))
def test_the_discord_emulator_imports_nothing_of_paperbot(path: Path) -> None:
    """Any discord.py bot can run against it: it imports itself (relatively), the standard library and
    aiohttp — never bot.*, storage or discord."""
    for level, module in _all_imports(path):
        top = module.partition(".")[0]
        if level == 0:
            assert top not in ("bot", "storage", "discord"), f"{path.relative_to(REPO)} imports {module}"
        else:
            assert level == 1, (
                f"{path.relative_to(REPO)} reaches outside the emulator (from {'.' * level}{module})"
            )


@pytest.mark.parametrize(
    "path",
    [p for p in _modules(EMULATOR) if p.name not in ("__init__.py", "server.py")],
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_no_part_of_the_sandbox_server_calls_back_into_it(path: Path) -> None:
    """SandboxServer owns the parts; a part never imports it (not even for a type) to call back."""
    assert (1, "server") not in _all_imports(path), (
        f"{path.relative_to(REPO)} imports the server that owns it"
    )


@pytest.mark.parametrize("path", _modules(REPO / "bot" / "ui"), ids=lambda p: str(p.relative_to(REPO)))
def test_rendering_never_reaches_the_client_or_the_root_not_even_for_a_type(path: Path) -> None:
    """bot/ui renders what a service returned; what a press does is an extension's (bot/exts), so
    nothing there needs the client that holds the services — not even to annotate an interaction."""
    for level, module in _all_imports(path):
        where = f"{path.relative_to(REPO)} imports {'.' * level}{module}"
        assert level == 0, where
        assert not module.startswith(("bot.app", "bot.runtime", "bot.exts")), where
