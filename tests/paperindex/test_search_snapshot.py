"""The search snapshot beside the database: the same engine back, exactly; nothing in it ever runs.

The file may be someone else's (a copied database, a shared volume): a snapshot crafted to run code
when unpickled must not run it, and a corrupt, truncated, foreign or wrong-version one is refused
with a log line (the bot then rebuilds it: tests/bot/test_runtime.py).
"""

from __future__ import annotations

import io
import json
import os
import pickle
import stat
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_search_engine import ROWS

from paperindex import snapshot
from paperindex.documents import Document as IndexRow
from paperindex.engine import SearchEngine
from paperindex.tokenizer import tokenize

Members = dict[str, np.ndarray]


class RunsCode:
    """Unpickling this touches ``marker``: what a hostile snapshot would do (and worse)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[..., object], tuple[object, ...]]:
        return (Path.touch, (self.marker,))


def armed(marker: Path) -> RunsCode:
    """A payload proven to run: unpickling a copy of it touches a sibling of ``marker``."""
    proof = marker.with_name(marker.name + ".proof")
    pickle.loads(pickle.dumps(RunsCode(proof)))  # proves the payload would run
    assert proof.exists()
    return RunsCode(marker)


def members_of(path: Path) -> tuple[dict[str, Any], Members]:
    with np.load(path, allow_pickle=False) as saved:
        arrays = {name: saved[name] for name in saved.files}
    return json.loads(arrays.pop("meta").tobytes()), arrays


def zip_with(path: Path, members: dict[str, bytes], *, compression: int = zipfile.ZIP_STORED) -> None:
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)


def npy(array: np.ndarray, *, allow_pickle: bool = False) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def replace_members(path: Path, replacements: dict[str, bytes]) -> None:
    """Rewrite the snapshot's zip with some members' raw ``.npy`` bytes replaced."""
    meta, arrays = members_of(path)
    members = {f"{name}.npy": npy(array) for name, array in arrays.items()}
    members["meta.npy"] = npy(np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8))
    members.update({f"{name}.npy": data for name, data in replacements.items()})
    zip_with(path, members)


#: what the snapshot of ROWS is saved for (the bot's says which store, up to which change, how many)
FINGERPRINT = "store=test seq=6 papers=6 title_weight=2"


def saved_snapshot(path: Path) -> Path:
    SearchEngine.build(ROWS).save(path, FINGERPRINT)
    return path


def assert_refused(path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Loading gives nothing (the caller rebuilds) and says so, naming the file."""
    caplog.clear()
    with caplog.at_level("INFO", logger="paperindex.engine"):
        assert SearchEngine.load(path, FINGERPRINT) is None
    assert any(str(path) in r.getMessage() and "rebuilding" in r.getMessage() for r in caplog.records), (
        caplog.text
    )


def test_round_trip_and_staleness(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "search" / "paperbot.db.search-index"
    assert SearchEngine.load(path, FINGERPRINT) is None  # no snapshot yet
    built = SearchEngine.build(ROWS)
    built.save(path, FINGERPRINT)
    assert zipfile.is_zipfile(path)
    loaded = SearchEngine.load(path, FINGERPRINT)
    assert loaded is not None
    assert loaded is not built
    for query in ["kv cache quantization", "attention"]:
        assert loaded.search(query, limit=10) == built.search(query, limit=10)
    assert loaded.autocomplete("atten") == built.autocomplete("atten")
    assert loaded.autocomplete("2402.02750") == built.autocomplete("2402.02750")
    assert loaded.search("cache", author="angel").total == 1
    assert loaded.search("models", venue="neur", year=2020).total == 1
    loaded.add([IndexRow(9, "Brand new paper", "About caches.")])  # still a working engine
    assert 9 in loaded
    loaded.remove([1])
    assert 1 not in loaded

    with caplog.at_level("INFO"):
        assert SearchEngine.load(path, "store=test seq=7 papers=6 title_weight=2") is None  # one more change
    assert "is stale: rebuilding" in caplog.text
    assert SearchEngine.load(tmp_path / "missing", FINGERPRINT) is None


def test_any_text_comes_back_exactly(tmp_path: Path) -> None:
    """Titles holding the separator (NUL), lone surrogates or emoji, an empty title: all kept as saved."""
    rows = [
        IndexRow(1, "Nul\x00in a title", "first abstract about caches", ("Ann \ud800 Lee",)),
        IndexRow(2, "", "second abstract about caches", ("🙂",)),
        IndexRow(3, "Plain title", "third abstract about graphs", ()),
    ]
    engine = SearchEngine.build(rows)
    engine.save(tmp_path / "s", "fp")
    loaded = SearchEngine.load(tmp_path / "s", "fp")
    assert loaded is not None
    assert [loaded.title(pid) for pid in (1, 2, 3)] == ["Nul\x00in a title", "", "Plain title"]
    assert loaded.search("caches", author="lee").total == 1
    assert loaded.search("caches", author="🙂").total == 1


def test_the_file_holds_only_plain_arrays(tmp_path: Path) -> None:
    path = saved_snapshot(tmp_path / "s")
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            assert info.compress_type == zipfile.ZIP_STORED
            with archive.open(info) as member:
                np.lib.format.read_magic(member)
                _, _, dtype = np.lib.format.read_array_header_1_0(member)
            assert dtype.kind in "biu", f"{info.filename} holds {dtype}"
    meta, arrays = members_of(path)
    assert meta["format"] == snapshot.FORMAT
    assert meta["fingerprint"] == FINGERPRINT
    assert "KIVI: 2bit Quantization for KV Cache" in arrays["engine.titles.utf8"].tobytes().decode()


def test_an_old_pickle_snapshot_that_would_run_code_is_never_unpickled(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A pickle in the old format, whose loading would create a file: ignored, rebuilt, nothing ran."""
    marker = tmp_path / "code-ran"
    path = tmp_path / "paperbot.db.search-index"
    state = {"format": 1, "fingerprint": FINGERPRINT, "engine": armed(marker)}
    path.write_bytes(pickle.dumps(state))
    assert_refused(path, caplog)
    assert not marker.exists(), "unpickling the snapshot ran its code"


@pytest.mark.parametrize("member", ["meta", "index.terms.utf8", "index.dl"])
def test_a_snapshot_with_a_pickled_object_array_is_refused_without_running_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, member: str
) -> None:
    """A well-formed snapshot in which one member is an object array (numpy pickles those)."""
    marker = tmp_path / "code-ran"
    path = saved_snapshot(tmp_path / "paperbot.db.search-index")
    replace_members(path, {member: npy(np.array([armed(marker)], dtype=object), allow_pickle=True)})
    assert_refused(path, caplog)
    assert not marker.exists(), "loading the snapshot ran its code"


def rewrite(path: Path, change: Callable[[dict[str, Any], Members], None]) -> None:
    meta, arrays = members_of(path)
    strings = {}
    for name in [n[: -len(".utf8")] for n in arrays if n.endswith(".utf8")]:
        text, ends = arrays.pop(name + ".utf8").tobytes(), arrays.pop(name + ".ends").tolist()
        strings[name] = [text[a:b].decode() for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    change(meta, arrays)
    snapshot.write(path, meta, arrays, strings)


def set_item(name: str, index: int, value: int) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        _, arrays = members_of(path)
        array = arrays[name].copy()
        array[index] = value
        replace_members(path, {name: npy(array)})

    return change


def set_meta(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    return lambda path: rewrite(path, lambda meta, arrays: change(meta))


def huge_header() -> bytes:
    """An .npy header promising 10^12 items over a few bytes of data."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<i8", "fortran_order": False, "shape": (10**12,)})
    return header.getvalue() + b"x" * 64


CORRUPTIONS: dict[str, Callable[[Path], None]] = {
    "random bytes": lambda p: p.write_bytes(bytes(range(256)) * 64),
    "truncated to half": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "last bytes cut": lambda p: p.write_bytes(p.read_bytes()[:-100]),
    "empty file": lambda p: p.write_bytes(b""),
    "wrong format version": set_meta(lambda meta: meta.update(format=99)),
    "foreign zip": lambda p: zip_with(p, {"data.npy": npy(np.arange(10))}),
    "compressed member": lambda p: zip_with(
        p, {"meta.npy": npy(np.zeros(1000, dtype=np.uint8))}, compression=zipfile.ZIP_DEFLATED
    ),
    "float array": lambda p: replace_members(p, {"index.dl": npy(np.ones(6))}),
    "missing array": lambda p: rewrite(p, lambda meta, arrays: arrays.pop("index.alive")),
    "header promises 10^12 items": lambda p: replace_members(p, {"index.dl": huge_header()}),
    "posting out of range": set_item("index.seg0.t_code8", -1, 255),
    "a document's term bytes run on": set_item("index.seg0.d_code", 0, 255),
    "term id past the vocabulary": set_item("index.seg0.d_code", -1, 127),
    "offsets decrease": set_item("index.seg0.t_indptr", 1, 10**6),
    "a tf of 0 with none beside it": set_item("index.seg0.t_tf", 0, 0),
    "tfs that disagree with the lengths": set_item("index.seg0.d_tf", 0, 0x22),
    "postings disagree": set_item("index.seg0.d_code", 0, 1),
    "length disagrees with the terms": set_item("index.dl", 0, 999),
    "title slot out of range": set_item("engine.title0.slots", 0, 77),
    "venue code out of range": set_item("engine.venues", 0, 40),
    "a title missing": lambda p: replace_members(
        p, {"engine.titles.ends": npy(members_of(p)[1]["engine.titles.ends"][:-1])}
    ),
    "terms not UTF-8": lambda p: replace_members(
        p, {"index.terms.utf8": npy(np.full(8, 0xFF, dtype=np.uint8))}
    ),
    "strings cut badly": lambda p: replace_members(
        p, {"engine.titles.utf8": npy(np.frombuffer(b"a\x00b", dtype=np.uint8))}
    ),
    "a string cut inside a character": lambda p: replace_members(
        p,
        {
            "engine.venue_names.utf8": npy(np.frombuffer("éé".encode(), dtype=np.uint8)),
            "engine.venue_names.ends": npy(np.array([1, 4], dtype=np.int64)),
        },
    ),
    "segments overlap": set_meta(lambda meta: meta["index"].update(segments=[[1, 6]])),
    "other bm25 parameters": set_meta(lambda meta: meta["index"].update(k1=2.0)),
}


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_a_corrupt_truncated_foreign_or_wrong_version_snapshot_is_refused_with_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, corruption: str
) -> None:
    path = saved_snapshot(tmp_path / "paperbot.db.search-index")
    CORRUPTIONS[corruption](path)
    assert_refused(path, caplog)


WORDS = ["kernel", "cache", "graph", "network", "sparse", "token", "quantum", "robot", "vision", "speech"]
sentence = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)
row = st.builds(
    lambda pid, title, abstract, venue, year: IndexRow(pid, title, abstract, ("A. Author",), venue, year),
    st.integers(1, 30),
    sentence,
    sentence,
    st.sampled_from([None, "ICML", "NeurIPS"]),
    st.sampled_from([None, 2023, 2024]),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    batches=st.lists(st.lists(row, min_size=1, max_size=8), min_size=1, max_size=4),
    removed=st.lists(st.integers(1, 30), max_size=4),
    queries=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), min_size=1, max_size=4),
)
def test_a_loaded_snapshot_scores_exactly_as_the_engine_that_saved_it(
    batches: list[list[IndexRow]], removed: list[int], queries: list[list[str]]
) -> None:
    """Adds in batches (several segments), replacements and removals (dead slots): after a round trip
    every score, idf and ranking is bit-identical, and the engine keeps working the same way."""
    engine = SearchEngine()
    for batch in batches:
        engine.add(batch)
    engine.remove(removed)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "snapshot"
        engine.save(path, "fingerprint")
        loaded = SearchEngine.load(path, "fingerprint")
    assert loaded is not None
    assert loaded.index.doc_ids == engine.index.doc_ids
    for query in queries:
        terms = tokenize(" ".join(query))
        assert loaded.index.scores(terms) == engine.index.scores(terms)
        assert loaded.index.rank(terms, 50) == engine.index.rank(terms, 50)
        assert [loaded.index.idf(t) for t in terms] == [engine.index.idf(t) for t in terms]
        assert loaded.autocomplete(query[0][:3]) == engine.autocomplete(query[0][:3])
    more = [IndexRow(99, "kernel cache", "graph network sparse"), IndexRow(1, "token", "vision speech")]
    engine.add(more)
    loaded.add(more)
    for query in queries:
        terms = tokenize(" ".join(query))
        assert loaded.index.scores(terms) == engine.index.scores(terms)


SAVE_MANY = """
import sys
from pathlib import Path
import numpy as np
from paperindex import snapshot

path, writer = Path(sys.argv[1]), int(sys.argv[2])
values = np.full(2_000_000, writer, dtype=np.int64)
for _ in range(8):
    snapshot.write(path, {"writer": writer}, {"values": values}, {"names": [str(writer)] * 1000})
"""


def test_two_processes_saving_at_once_leave_one_whole_snapshot(tmp_path: Path) -> None:
    """Two processes on one state folder (a bot and a `paperbot search`) save the snapshot at the same
    time, again and again: neither fails, and the file is always one writer's whole snapshot."""
    repo = Path(__file__).resolve().parents[2]
    path = tmp_path / "paperbot.db.search-index"
    command = [sys.executable, "-c", SAVE_MANY, str(path)]
    writers = [
        subprocess.Popen([*command, str(n)], cwd=repo, stderr=subprocess.PIPE, text=True) for n in (1, 2)
    ]
    errors = [writer.communicate(timeout=120)[1] for writer in writers]
    assert [writer.returncode for writer in writers] == [0, 0], "\n".join(errors)
    with snapshot.Snapshot(path) as saved:
        writer = saved.meta["writer"]
        assert writer in (1, 2)
        assert bool(np.all(saved.array("values", (np.int64,), length=2_000_000) == writer))
        assert saved.strings("names", length=1000) == [str(writer)] * 1000
    assert [p.name for p in tmp_path.iterdir()] == [path.name], "no temporary file left behind"


def test_the_snapshot_is_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        path = saved_snapshot(tmp_path / "state" / "paperbot.search-index")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_each_engine_shows_the_words_of_its_own_papers_and_its_snapshot_keeps_them(tmp_path: Path) -> None:
    """The word shown for a term is the one most pieces of its papers' text write (the engine's
    vocabulary), saved with its snapshot: another engine's papers, in the same process, and the
    queries asked change nothing of it."""
    caching = SearchEngine.build([IndexRow(1, "Caching", "We study caching and caching. Caches help.")])
    caches = SearchEngine.build([IndexRow(1, "Caches", "Caches and caches. A cached page")])
    caching.search("cached caches cache")
    assert caching.vocabulary.form("cach") == "caching"
    assert caches.vocabulary.form("cach") == "caches"
    path = tmp_path / "snapshot"
    caching.save(path, "fingerprint")
    loaded = SearchEngine.load(path, "fingerprint")
    assert loaded is not None
    assert loaded.vocabulary.counts() == caching.vocabulary.counts()
    assert loaded.vocabulary.form("cach") == "caching"
