"""Selective manifest reads (metadata/manifests/entry_index.py, ``ManifestStore.select_entries``): the entries of
partitions a scan keeps, without decoding the others.

Every test compares against the full read filtered afterwards, so a shortcut that drops, invents or
half-decodes an entry fails: a DELETE that must cancel an ADD in another manifest, the skipped partitions'
tally, the manifest cache going from an index to a full list and back, layouts the index does not know.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyspark_paimon.errors import CorruptMetadataError
from pyspark_paimon.metadata.io.avro import write_avro
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.manifests.manifest import (
    KIND_ADD,
    KIND_DELETE,
    MANIFEST_CACHE,
    MANIFEST_ENTRY_SCHEMA,
    DataFileMeta,
    ManifestEntry,
    ManifestFileMeta,
    ManifestStore,
    SimpleStats,
    SkippedFiles,
    entry_to_avro,
    merge_entries,
)
from pyspark_paimon.metadata.rows.binary_row import serialize_row
from pyspark_paimon.metadata.types.model import string_type
from tests.metadata.test_manifest import rich_entries

STR = [string_type()]


def part(value: str | None) -> bytes:
    return serialize_row([value], STR)


def entry(kind: int, partition: str | None, bucket: int, name: str, level: int = 0, size: int = 100) -> ManifestEntry:
    return ManifestEntry(
        kind,
        part(partition),
        bucket,
        4,
        DataFileMeta(
            file_name=name,
            file_size=size,
            row_count=size // 10,
            level=level,
            value_stats=SimpleStats(part(name), part(name), (0,)),
            value_stats_cols=("v",),
        ),
    )


def fresh(store: ManifestStore, shared: bool = False) -> ManifestStore:
    """A store with an empty local cache: its reads parse the files."""
    return ManifestStore(store.fileio, store.table_path, shared_cache=shared)


def in_partitions(*values: str | None) -> Any:
    wanted = {part(v) for v in values}
    return lambda p: p in wanted


def expected(metas: list[ManifestFileMeta], store: ManifestStore, test: Any) -> tuple[list, dict]:
    """What a selective read must give: the fold of the full read, split by ``test``."""
    live = [e for e in merge_entries(fresh(store).read_entries(metas)) if e.kind == KIND_ADD]
    others: dict[tuple[bytes, int], list[int]] = {}
    for e in live:
        if not test(e.partition):
            tally = others.setdefault((e.partition, e.bucket), [0, 0])
            tally[0] += 1
            tally[1] += e.file.file_size
    return [e for e in live if test(e.partition)], others


def selected(store: ManifestStore, metas: list[ManifestFileMeta], test: Any) -> tuple[list, dict]:
    entries, skipped = store.select_entries(metas, test)
    live = [e for e in merge_entries(entries) if e.kind == KIND_ADD]
    return live, {(p, b): [n, size] for p, b, n, size in skipped.live()}


@pytest.fixture
def store(tmp_path: Path) -> ManifestStore:
    fio, path = FileIO.for_uri(str(tmp_path / "t"))
    return ManifestStore(fio, path)


@pytest.fixture(autouse=True)
def _clean_cache() -> Any:
    MANIFEST_CACHE.clear()
    yield
    MANIFEST_CACHE.clear()


# ------------------------------------------------------------------------------------------ exact entries
def test_every_field_decodes_as_a_full_read(store: ManifestStore) -> None:
    entries = rich_entries()
    meta = store.write_manifest(entries, 2, SimpleStats.empty())
    got, skipped = fresh(store).select_entries([meta], lambda p: True)
    assert got == entries and not skipped.net
    got, skipped = fresh(store).select_entries([meta], lambda p: p == part("2024-01-01"))
    assert got == entries[:1]
    assert skipped.net == {(part(None), 0): [-1, -10], (serialize_row([], []), -2): [1, 1010]}


def test_delete_cancels_add_of_another_manifest(store: ManifestStore) -> None:
    first = store.write_manifest(
        [entry(KIND_ADD, "a", 0, "f1"), entry(KIND_ADD, "b", 0, "f2"), entry(KIND_ADD, "a", 1, "f3")],
        0,
        SimpleStats.empty(),
    )
    second = store.write_manifest(
        [
            entry(KIND_DELETE, "a", 0, "f1"),
            entry(KIND_ADD, "a", 0, "f4", level=1),
            entry(KIND_DELETE, "b", 0, "f2"),
            entry(KIND_ADD, "b", 0, "f5"),
        ],
        0,
        SimpleStats.empty(),
    )
    got, others = selected(fresh(store), [first, second], in_partitions("a"))
    assert [e.file.file_name for e in got] == ["f3", "f4"]
    assert others == {(part("b"), 0): [1, 100]}  # f2 added and deleted, f5 live
    assert (got, others) == expected([first, second], store, in_partitions("a"))


entries_strategy = st.lists(
    st.tuples(
        st.sampled_from(["x", "y", "z", None]), st.integers(0, 2), st.integers(0, 5), st.booleans(), st.integers(0, 3)
    ),
    min_size=0,
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries_strategy, st.sets(st.sampled_from(["x", "y", "z", None])), st.integers(1, 3))
def test_selective_read_equals_filtered_full_read(spec: list[tuple], wanted: set, manifests: int) -> None:
    """Random histories (files added, later deleted or re-added at another level) spread over several
    manifests: the selective read folds to exactly the full read's live files of the wanted partitions, and
    its tally of the others matches the full read's live files there."""
    live: dict[tuple, ManifestEntry] = {}
    entries = []
    for partition, bucket, file_no, delete, level in spec:
        name = f"data-{partition}-{bucket}-{file_no}.parquet"
        key = (partition, bucket, name)
        if delete and key in live:
            entries.append(ManifestEntry(KIND_DELETE, live[key].partition, bucket, 4, live.pop(key).file))
        elif key not in live:
            live[key] = entry(KIND_ADD, partition, bucket, name, level=level, size=100 + file_no)
            entries.append(live[key])
    with tempfile.TemporaryDirectory() as tmp:
        fio, path = FileIO.for_uri(tmp)
        writer = ManifestStore(fio, path)
        step = max(1, -(-len(entries) // manifests))
        metas = [
            writer.write_manifest(entries[i : i + step], 0, SimpleStats.empty()) for i in range(0, len(entries), step)
        ] or [writer.write_manifest([], 0, SimpleStats.empty())]
        test = in_partitions(*wanted)
        want = expected(metas, writer, test)
        assert selected(fresh(writer), metas, test) == want
        MANIFEST_CACHE.clear()
        shared = fresh(writer, shared=True)
        assert selected(shared, metas, test) == want  # from the index
        assert selected(shared, metas, test) == want  # from the index again (entries decoded once)
        assert selected(shared, metas, lambda p: True)[0] == expected(metas, writer, lambda p: True)[0]
        assert shared.read_entries(metas) == fresh(writer).read_entries(metas)  # the cache now holds full lists
        assert selected(shared, metas, test) == want  # from the full lists


# ------------------------------------------------------------------------------------------ the cache
def test_cache_upgrades_an_index_to_the_full_list(store: ManifestStore) -> None:
    entries = [entry(KIND_ADD, p, b, f"f-{p}-{b}") for p in "abc" for b in range(3)]
    meta = store.write_manifest(entries, 0, SimpleStats.empty())
    MANIFEST_CACHE.clear()
    shared = fresh(store, shared=True)
    key = shared._key(meta.file_name)
    assert [e.file.file_name for e in shared.select_manifest(meta.file_name, in_partitions("b"), _tally())] == [
        "f-b-0",
        "f-b-1",
        "f-b-2",
    ]
    cached = MANIFEST_CACHE.get(key)
    assert not isinstance(cached, list), "a partly decoded manifest must never look like a full list"
    assert len(cached) == len(entries)  # weighs what the full list will
    assert len(cached.decoded) == 3  # only the kept entries were decoded
    got = shared.select_manifest(meta.file_name, in_partitions("a", "c"), _tally())
    assert [e.file.file_name for e in got] == [f"f-{p}-{b}" for p in "ac" for b in range(3)]
    assert fresh(store, shared=True).read_manifest(meta.file_name) == entries  # a full read completes it
    assert MANIFEST_CACHE.get(key) == entries
    MANIFEST_CACHE.clear()
    assert fresh(store, shared=True).read_manifest(meta.file_name) == entries
    got = fresh(store, shared=True).select_manifest(meta.file_name, in_partitions("c"), tally := _tally())
    assert got == entries[6:] and sum(n for _, _, n, _ in tally.live()) == 6


def _tally() -> SkippedFiles:
    return SkippedFiles()


def test_decoded_entries_are_shared_not_redecoded(store: ManifestStore) -> None:
    meta = store.write_manifest([entry(KIND_ADD, "a", 0, "f1"), entry(KIND_ADD, "b", 0, "f2")], 0, SimpleStats.empty())
    MANIFEST_CACHE.clear()
    shared = fresh(store, shared=True)
    first = shared.select_manifest(meta.file_name, in_partitions("a"), _tally())
    full = shared.read_manifest(meta.file_name)
    assert full[0] is first[0]


# ------------------------------------------------------------------------------------------ other layouts, damage
def test_foreign_field_order_is_decoded_whole(store: ManifestStore) -> None:
    """A writer that orders the entry fields differently still reads right (whole-file decode)."""
    schema = json.loads(json.dumps(MANIFEST_ENTRY_SCHEMA))
    schema["fields"] = schema["fields"][1:2] + schema["fields"][:1] + schema["fields"][2:]
    file_fields = schema["fields"][-1]["type"]["fields"]
    file_fields[0], file_fields[1] = file_fields[1], file_fields[0]
    entries = [entry(KIND_ADD, "a", 0, "f1"), entry(KIND_ADD, "b", 0, "f2"), entry(KIND_DELETE, "a", 0, "f1")]
    store.fileio.write_bytes(store.path("manifest-odd-0"), write_avro(schema, [entry_to_avro(e) for e in entries]))
    meta = ManifestFileMeta("manifest-odd-0", 1, 2, 1, SimpleStats.empty(), 0)
    got, others = selected(fresh(store), [meta], in_partitions("b"))
    assert [e.file.file_name for e in got] == ["f2"] and others == {}
    assert (got, others) == expected([meta], store, in_partitions("b"))


def test_without_compiled_value_readers_files_are_decoded_whole(
    store: ManifestStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark_paimon.metadata.manifests import entry_index as manifest_index

    monkeypatch.setattr(manifest_index, "VALUE_READERS", False)
    first = store.write_manifest([entry(KIND_ADD, "a", 0, "f1"), entry(KIND_ADD, "b", 0, "f2")], 0, SimpleStats.empty())
    second = store.write_manifest([entry(KIND_DELETE, "a", 0, "f1")], 0, SimpleStats.empty())
    MANIFEST_CACHE.clear()
    shared = fresh(store, shared=True)
    assert selected(shared, [first, second], in_partitions("a", "b")) == expected(
        [first, second], store, in_partitions("a", "b")
    )
    assert isinstance(MANIFEST_CACHE.get(shared._key(first.file_name)), list)


def test_value_readers_are_probed_before_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled readers are fastavro internals: one whose signature changed must disable selective reads
    (whole-file decoding), never make a healthy manifest look corrupt."""
    from pyspark_paimon.metadata.io import avro

    assert avro.value_readers_work()  # the installed fastavro (the lanes run 1.8.4 and the newest)

    def changed_signature(stream: Any, schema: Any, named: Any) -> Any:
        raise TypeError("read_record() takes exactly 3 positional arguments (5 given)")

    avro.value_readers_work.cache_clear()
    monkeypatch.setattr(avro, "read_record", changed_signature)
    try:
        assert not avro.value_readers_work()
    finally:
        avro.value_readers_work.cache_clear()


def test_damaged_manifest_is_named(store: ManifestStore) -> None:
    meta = store.write_manifest([entry(KIND_ADD, "a", 0, f"f{i}") for i in range(30)], 0, SimpleStats.empty())
    data = store.fileio.read_bytes(store.path(meta.file_name))
    for cut in (len(data) // 2, len(data) - 20):
        store.fileio.write_bytes(store.path("manifest-cut-0"), data[:cut])
        with pytest.raises(CorruptMetadataError, match="manifest-cut-0"):
            fresh(store).select_entries(
                [ManifestFileMeta("manifest-cut-0", cut, 30, 0, SimpleStats.empty(), 0)], in_partitions("a")
            )
    record = entry_to_avro(entry(KIND_ADD, "a", 0, "f1"))
    record["_VERSION"] = 1
    store.fileio.write_bytes(store.path("manifest-v1-0"), write_avro(MANIFEST_ENTRY_SCHEMA, [record]))
    with pytest.raises(CorruptMetadataError, match="manifest-v1-0.*version"):
        fresh(store).select_entries(
            [ManifestFileMeta("manifest-v1-0", 1, 1, 0, SimpleStats.empty(), 0)], in_partitions("b")
        )
