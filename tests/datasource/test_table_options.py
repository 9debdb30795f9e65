"""Table options at work through the Python API: the keys the registry honours do what Java does with them,
and tables whose options (as Java leaves them) change semantics we do not implement are refused, on read or
on write, with an error that names the key."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import replace
from pathlib import Path
from zoneinfo import ZoneInfo

import fastavro
import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.jobs import prepare_read
from pyspark_paimon.errors import CommitConflictError, OptionError
from pyspark_paimon.metadata.schema.table_schema import SchemaManager
from pyspark_paimon.metadata.snapshots import commit as commit_module
from pyspark_paimon.metadata.snapshots.commit import FileStoreCommit
from pyspark_paimon.metadata.snapshots.snapshot import SnapshotManager
from pyspark_paimon.metadata.types.model import AtomicType
from pyspark_paimon.planner.read_options import ReadOptions

ROWS = pa.table({"dt": ["a", "a", "b"], "id": [1, 2, 3], "v": ["x", "y", "z"]})


def _create(tmp_path: Path, options: dict[str, str] | None = None, pk: bool = True) -> Table:
    return Catalog(str(tmp_path / "wh")).create_table(
        "db.t",
        "dt string, id bigint, v string",
        partition_keys=["dt"],
        primary_keys=["dt", "id"] if pk else [],
        options={"bucket": "2" if pk else "-1", **(options or {})},
    )


def _rows(table: Table, options: dict[str, str] | None = None) -> list[dict[str, object]]:
    return sorted(table.scan(read_options=options).to_arrow().to_pylist(), key=lambda r: (r["dt"], r["id"]))


def _as_java_left_it(table: Table, options: dict[str, str]) -> None:
    """Store options as a Java writer could have: a new schema file, without our validation (Table.set_options
    validates, and immutable keys cannot change at all)."""
    manager = SchemaManager(table.store.fileio, table.store.table_path)
    latest = manager.latest()
    assert latest is not None
    assert manager.commit(replace(latest, id=latest.id + 1, options={**latest.options, **options}))


def _files(root: str, suffix: str) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs if f.endswith(suffix)
    )


# ------------------------------------------------------------------------------------ data-file.path-directory
@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_path_directory_places_data_files_below_it(tmp_path: Path, pk: bool) -> None:
    table = _create(tmp_path, {"data-file.path-directory": "data//files/"}, pk=pk)
    assert table.options["data-file.path-directory"] == "data//files/"  # stored as given; normalised when used
    table.write_arrow(ROWS)
    table.write_arrow(pa.table({"dt": ["b"], "id": [4], "v": ["w"]}))
    files = _files(table.store.table_path, ".parquet")
    assert files and all(f.startswith("data/files/dt=") and "/bucket-" in f for f in files), files
    assert not any(name.startswith("dt=") for name in os.listdir(table.store.table_path))
    assert [r["id"] for r in _rows(table)] == [1, 2, 3, 4]
    assert {r["file_path"] for r in table.inspect.files().to_pylist()} == {
        f"{table.store.table_path}/{f}" for f in files
    }


def test_path_directory_maintenance_finds_the_files(tmp_path: Path) -> None:
    table = _create(tmp_path, {"data-file.path-directory": "data"})
    table.write_arrow(ROWS)
    table.write_arrow(ROWS, mode="overwrite")
    stray = Path(table.store.table_path, "data", "dt=a", "bucket-0", "data-stray.parquet")
    stray.write_bytes(b"not referenced")
    found = table.maintenance.remove_orphan_files(older_than=dt.datetime.now() + dt.timedelta(minutes=1), dry_run=True)
    assert found.files == [str(stray)]
    live = len(table.store.live_entries(table.latest_snapshot()))
    assert len(_files(table.store.table_path, ".parquet")) == 2 * live + 1  # both writes' files and the stray
    table.maintenance.expire_snapshots(retain_max=1, retain_min=1)  # deletes the overwritten files, below the directory
    assert len(_files(table.store.table_path, ".parquet")) == live + 1
    assert [r["id"] for r in _rows(table)] == [1, 2, 3]


def test_path_directory_values_and_immutability(tmp_path: Path) -> None:
    for bad in ("/", "../outside", "a/../b", "s3://bucket/x", "./data"):
        table_dir = tmp_path / f"bad{abs(hash(bad))}"
        with pytest.raises(OptionError, match="'data-file.path-directory' must be a relative directory"):
            _create(table_dir, {"data-file.path-directory": bad})
    table = _create(tmp_path, {"data-file.path-directory": "data"})
    with pytest.raises(OptionError, match="'data-file.path-directory' cannot be changed on an existing table"):
        table.update_schema().set_options({"data-file.path-directory": "other"}).commit()


# ------------------------------------------------------------------------------------ manifests and commits
def _manifest_codecs(table: Table) -> set[str]:
    codecs = set()
    for name in os.listdir(Path(table.store.table_path, "manifest")):
        with open(Path(table.store.table_path, "manifest", name), "rb") as f:
            codecs.add(fastavro.reader(f).metadata.get("avro.codec", "null"))
    return codecs


@pytest.mark.parametrize(
    "codec, avro", [("zstd", "zstandard"), ("snappy", "snappy"), ("none", "null"), ("deflate", "deflate")]
)
def test_manifest_compression_is_the_codec_of_new_manifests(tmp_path: Path, codec: str, avro: str) -> None:
    table = _create(tmp_path, {"manifest.compression": codec})
    table.write_arrow(ROWS)
    assert _manifest_codecs(table) == {avro}
    assert [r["id"] for r in _rows(table)] == [1, 2, 3]


def test_manifest_compression_refuses_codecs_java_cannot_read(tmp_path: Path) -> None:
    table = _create(tmp_path, {"manifest.compression": "lz4"})
    with pytest.raises(OptionError, match="'manifest.compression' = 'lz4' is not an Avro codec Paimon can read"):
        table.write_arrow(ROWS)
    assert table.latest_snapshot() is None


def test_manifest_target_file_size_rolls_manifests(tmp_path: Path) -> None:
    table = _create(tmp_path, {"manifest.target-file-size": "1 kb", "manifest.merge-min-count": "3"}, pk=False)
    for i in range(6):
        table.write_arrow(pa.table({"dt": [f"p{j}" for j in range(8)], "id": list(range(8)), "v": [str(i)] * 8}))
    store = table.store
    snapshot = store.snapshots.latest()
    metas = store.data_manifests(snapshot)
    assert len(metas) > 1 and max(m.file_size for m in metas) < 4 * 1024  # rolled near the target
    assert len(store.live_entries(snapshot)) == 48
    assert len(table.scan().to_arrow()) == 48


def test_commit_user_prefix(tmp_path: Path) -> None:
    table = _create(tmp_path, {"commit.user-prefix": "nightly"})
    table.write_arrow(ROWS)
    user = table.latest_snapshot().commit_user  # type: ignore[union-attr]
    assert user.startswith("nightly_") and len(user) == len("nightly_") + 36


def test_commit_timeout_stops_retrying(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commit measures ``commit.timeout`` on a clock; a fake one (advanced only by the back-off sleeps)
    makes the number of attempts exact instead of depending on how fast the machine runs."""
    table = _create(tmp_path)
    attempts = []

    def always_lose(self: SnapshotManager, snapshot: object) -> bool:
        attempts.append(1)
        return False

    class FakeClock:
        now = 0.0

        def monotonic(self) -> float:
            return self.now

        def sleep(self, seconds: float) -> None:
            self.now += seconds

    clock = FakeClock()
    monkeypatch.setattr(SnapshotManager, "try_commit", always_lose)
    monkeypatch.setattr(commit_module, "time", clock)
    monkeypatch.setattr(commit_module.random, "uniform", lambda low, high: high)  # back-off without jitter
    committer = FileStoreCommit(
        table.store,
        options={
            "commit.timeout": "30 ms",
            "commit.max-retries": "1000",
            "commit.min-retry-wait": "10 ms",
            "commit.max-retry-wait": "10 ms",
        },
    )
    with pytest.raises(CommitConflictError, match=r"after 5 attempts: 'commit.timeout' \(30 ms\) passed"):
        committer.commit([], allow_empty=True)
    # Each lost attempt sleeps 10 ms: the 5th fails 40 ms in, the first check past the 30 ms timeout.
    assert len(attempts) == 5 and clock.now == pytest.approx(0.04)


# ------------------------------------------------------------------------------------ reads
def test_open_file_cost_table_option_packs_fewer_files_per_task(tmp_path: Path) -> None:
    table = _create(tmp_path, pk=False)
    for i in range(12):
        table.write_arrow(pa.table({"dt": ["a"], "id": [i], "v": ["x"]}))

    def tasks(options: dict[str, str]) -> int:
        _as_java_left_it(table, options)
        job = prepare_read(table.store, ReadOptions())
        return len(job.groups(ReadOptions()))

    cheap = tasks({"source.split.open-file-cost": "1 kb"})
    costly = tasks({"source.split.open-file-cost": "64 mb"})  # 12 files x 64 mb over 128 mb targets
    assert costly == 6 and cheap < costly


# ------------------------------------------------------------------------------------ tags and schema changes
def test_sink_process_time_zone_names_batch_tags(tmp_path: Path) -> None:
    table = _create(tmp_path, {"tag.automatic-creation": "batch", "sink.process-time-zone": "Pacific/Kiritimati"})
    written = table.write_arrow(ROWS)
    assert written.snapshot_id is not None
    snapshot = table.snapshot(written.snapshot_id)
    day = dt.datetime.fromtimestamp(snapshot.time_millis / 1000, ZoneInfo("Pacific/Kiritimati")).date()
    assert [t.name for t in table.tags.list()] == [f"batch-write-{day.isoformat()}"]


def test_sink_process_time_zone_must_be_a_zone(tmp_path: Path) -> None:
    table = _create(tmp_path, {"tag.automatic-creation": "batch", "sink.process-time-zone": "Mars/Olympus"})
    with pytest.raises(OptionError, match="'sink.process-time-zone' = 'Mars/Olympus' is not a known time zone"):
        table.write_arrow(ROWS)


def test_add_column_before_partition(tmp_path: Path) -> None:
    table = Catalog(str(tmp_path / "wh")).create_table(
        "db.t",
        "id bigint, dt string, h int",
        partition_keys=["dt", "h"],
        options={"add-column-before-partition": "true"},
    )
    table.update_schema().add_column("extra", AtomicType("INT")).commit()
    assert table.schema.field_names == ["id", "extra", "dt", "h"]
    table.update_schema().add_column("last", AtomicType("INT")).commit()
    assert table.schema.field_names == ["id", "extra", "last", "dt", "h"]


# ------------------------------------------------------------------------------------ tables Java left us
def test_a_semantic_option_java_stored_refuses_the_read(tmp_path: Path) -> None:
    table = _create(tmp_path)
    table.write_arrow(ROWS)
    _as_java_left_it(table, {"sequence.snapshot-ordering": "true"})
    with pytest.raises(OptionError) as info:
        table.scan().to_arrow()
    message = str(info.value)
    assert "Option 'sequence.snapshot-ordering' = 'true'" in message and table.store.table_path in message
    assert "Fix: " in message
    with pytest.raises(OptionError, match="sequence.snapshot-ordering"):
        table.write_arrow(ROWS)


def test_a_stored_time_travel_option_refuses_the_read(tmp_path: Path) -> None:
    table = _create(tmp_path)
    table.write_arrow(ROWS)
    table.write_arrow(ROWS)
    _as_java_left_it(table, {"scan.snapshot-id": "1"})
    with pytest.raises(OptionError, match="'scan.snapshot-id' = '1'.*pass the read option instead"):
        table.scan().to_arrow()
    _as_java_left_it(table, {"scan.snapshot-id": ""})  # blank = unset
    assert len(table.scan(read_options={"scan.snapshot-id": "1"}).to_arrow()) == 3


def test_write_only_semantics_refuse_the_write_not_the_read(tmp_path: Path) -> None:
    table = _create(tmp_path, pk=False)
    table.write_arrow(ROWS)
    _as_java_left_it(table, {"commit.callbacks": "com.example.Callback"})
    assert len(table.scan().to_arrow()) == 3
    with pytest.raises(OptionError, match="'commit.callbacks' = 'com.example.Callback'.*cannot be written or created"):
        table.write_arrow(ROWS)


def test_inert_and_unknown_options_java_stored_are_read(tmp_path: Path) -> None:
    table = _create(tmp_path)
    table.write_arrow(ROWS)
    _as_java_left_it(
        table,
        {
            "lookup.cache-rows": "5",
            "sink.parallelism": "4",
            "file-index.bloom-filter.columns": "v",
            "some.engine.private-key": "x",
            "fields.v.nested-key": "id",
        },
    )
    assert len(table.scan().to_arrow()) == 3
    table.write_arrow(ROWS)  # none of them changes what the write must produce
    with pytest.raises(OptionError, match="Unknown table option 'some.engine.private-key'"):
        table.update_schema().set_options({"some.engine.private-key": "y"}).commit()


def test_incremental_reads_of_changelog_tables_need_delta_mode(tmp_path: Path) -> None:
    table = _create(tmp_path)
    table.write_arrow(ROWS)
    table.write_arrow(pa.table({"dt": ["a"], "id": [9], "v": ["new"]}))
    _as_java_left_it(table, {"changelog-producer": "input"})
    assert len(table.scan().to_arrow()) == 4  # a batch read never reads changelog files
    with pytest.raises(OptionError, match="'changelog-producer' = 'input'.*incremental-between-scan-mode' = 'delta'"):
        table.scan(read_options={"incremental-between": "1,2"}).to_arrow()
    delta = table.scan(read_options={"incremental-between": "1,2", "incremental-between-scan-mode": "delta"}).to_arrow()
    assert delta.column("id").to_pylist() == [9]
    with pytest.raises(OptionError, match="'incremental-between-scan-mode' only applies to incremental reads"):
        table.scan(read_options={"incremental-between-scan-mode": "delta"}).to_arrow()
    with pytest.raises(OptionError, match="'incremental-between-scan-mode' = 'changelog' is not supported"):
        table.scan(read_options={"incremental-between": "1,2", "incremental-between-scan-mode": "changelog"}).to_arrow()
    # A diff compares the two versions' data files, so a changelog producer does not matter to it.
    diff = table.scan(read_options={"incremental-between": "1,2", "incremental-between-scan-mode": "diff"}).to_arrow()
    assert diff.column("id").to_pylist() == [9]
    written = table.write_arrow(ROWS)  # the input rows also go to changelog files, as Java's writers do
    assert written.snapshot_id is not None
    assert table.snapshot(written.snapshot_id).changelog_record_count == len(ROWS)


def test_legacy_default_value_option_is_refused(tmp_path: Path) -> None:
    table = _create(tmp_path)
    table.write_arrow(ROWS)
    _as_java_left_it(table, {"fields.v.default-value": "n/a"})
    with pytest.raises(OptionError, match="'fields.v.default-value' = 'n/a'.*Paimon up to 1.2 reads NULLs"):
        table.scan().to_arrow()
