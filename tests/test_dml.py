"""Row-level DML through the facade (issue 24): ``t.delete``, ``t.update``, ``t.merge(...).execute()``.

Each test checks the table's rows after the change against what SQL semantics say, and the commit shape
(one snapshot, APPEND for primary-key tables, OVERWRITE with DELETEs for copy-on-write append tables).
Readers other than ours (Java, pypaimon, Spark) read DML results in tests/interop/test_dml_interop.py.
"""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.datasource.dml.stale_reads import DML_ATTEMPTS
from pyspark_paimon.errors import CommitConflictError, DmlError, OptionError, SchemaMismatchError
from pyspark_paimon.metadata.manifests.manifest import KIND_DELETE
from pyspark_paimon.metadata.snapshots.commit import CommitMessage, FileStoreCommit


def _rows(t: Table) -> list[tuple]:
    return sorted(tuple(r.values()) for r in t.scan().to_arrow().to_pylist())


def _pk(catalog: Catalog, name: str, **options: Any) -> Table:
    t = catalog.create_table(
        f"db.{name}",
        "id BIGINT, dt STRING, v BIGINT, s STRING",
        partition_keys=["dt"],
        primary_keys=["id", "dt"],
        options={"bucket": "2", **options},
    )
    t.write_arrow(pa.table({"id": [1, 2, 3, 4], "dt": ["a", "a", "b", "b"], "v": [10, 20, 30, 40], "s": list("xyzw")}))
    return t


def _append(catalog: Catalog, name: str, **options: Any) -> Table:
    t = catalog.create_table(f"db.{name}", "id BIGINT, dt STRING, v BIGINT", partition_keys=["dt"], options=options)
    t.write_arrow(pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"], "v": [10, 20, 30]}))
    t.write_arrow(pa.table({"id": [4, 5], "dt": ["b", "b"], "v": [40, 50]}))
    return t


# ------------------------------------------------------------------------------------------- primary keys
def test_pk_delete_update_merge(catalog: Catalog) -> None:
    t = _pk(catalog, "pk")
    before = t.latest_snapshot()
    assert before is not None
    assert t.delete("dt = 'b' AND v > 35").deleted == 1
    assert _rows(t) == [(1, "a", 10, "x"), (2, "a", 20, "y"), (3, "b", 30, "z")]
    snap = t.latest_snapshot()
    assert snap is not None and snap.id == before.id + 1 and snap.commit_kind == "APPEND"

    assert t.update({"v": "v * 2 + 1", "s": "upper(s)"}, "id <= 2").updated == 2
    assert _rows(t) == [(1, "a", 21, "X"), (2, "a", 41, "Y"), (3, "b", 30, "z")]

    source = pa.table({"id": [2, 3, 7], "dt": ["a", "b", "b"], "v": [5, 6, 7], "s": ["m", "n", "o"]})
    result = (
        t.merge(source, on=["id", "dt"])
        .when_matched_update({"v": "source.v + target.v"}, condition="source.id = 2")
        .when_matched_delete()
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result.updated, result.deleted, result.inserted) == (1, 1, 1)
    assert _rows(t) == [(1, "a", 21, "X"), (2, "a", 46, "Y"), (7, "b", 7, "o")]
    # Nothing matched: no commit.
    latest = t.latest_snapshot()
    assert t.delete("id = 99").deleted == 0
    assert t.latest_snapshot() == latest


def test_pk_update_refuses_key_and_partition_columns(catalog: Catalog) -> None:
    t = _pk(catalog, "keys")
    with pytest.raises(DmlError, match="'id' .* primary key"):
        t.update({"id": "id + 1"})
    with pytest.raises(DmlError, match="'dt' .* partition column"):
        _append(catalog, "keys_ap").update({"dt": "'c'"})
    with pytest.raises(OptionError, match="no column 'nope'"):
        t.update({"nope": "1"})


def test_partial_update_delete_needs_its_option(catalog: Catalog) -> None:
    refused = _pk(catalog, "pu", **{"merge-engine": "partial-update"})
    with pytest.raises(DmlError, match="partial-update.remove-record-on-delete"):
        refused.delete("id = 1")
    assert refused.update({"s": "'q'"}, "id = 1").updated == 1  # an upsert of the whole row: partial-update takes it
    assert (1, "a", 10, "q") in _rows(refused)
    accepted = _pk(
        catalog, "pu2", **{"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}
    )
    assert accepted.delete("id = 1").deleted == 1
    assert [r[0] for r in _rows(accepted)] == [2, 3, 4]


@pytest.mark.parametrize(
    ("options", "op", "match"),
    [
        ({"merge-engine": "first-row"}, "delete", "first-row"),
        ({"merge-engine": "first-row"}, "update", "first-row"),
        ({"merge-engine": "aggregation"}, "update", "aggregation"),
        ({"merge-engine": "aggregation"}, "delete", "aggregation.remove-record-on-delete"),
        ({"ignore-delete": "true"}, "delete", "ignore-delete"),
        ({"deletion-vectors.enabled": "true", "write-only": "true"}, "update", "write-only"),
    ],
)
def test_merge_engines_without_the_change_refuse_it(
    catalog: Catalog, options: dict[str, str], op: str, match: str
) -> None:
    t = _pk(catalog, f"engine_{op}_{len(options)}_{sorted(options.values())[0].replace('-', '_')}", **options)
    before = _rows(t)
    with pytest.raises(DmlError, match=match):
        if op == "delete":
            t.delete("id = 1")
        else:
            t.update({"v": "0"})
    assert _rows(t) == before


def test_deletion_vector_tables(catalog: Catalog) -> None:
    """A deletion-vector primary-key table shows the change at once (the lookup compaction after each write);
    an append table with deletion vectors enabled gets vectors, not rewritten files."""
    pk = _pk(catalog, "dv_pk", **{"deletion-vectors.enabled": "true"})
    assert pk.delete("id = 2").deleted == 1
    assert pk.update({"v": "v + 1"}, "dt = 'b'").updated == 2
    assert _rows(pk) == [(1, "a", 10, "x"), (3, "b", 31, "z"), (4, "b", 41, "w")]
    ap = _append(catalog, "dv_ap", **{"deletion-vectors.enabled": "true"})
    assert ap.delete("id = 2").deleted == 1
    assert [r[0] for r in _rows(ap)] == [1, 3, 4, 5]


def _vectors(t: Table) -> dict[str, list[int]]:
    """Every data file's deleted positions in the latest snapshot, by file name."""
    from pyspark_paimon.metadata.manifests.deletion_vectors import deletion_files, read_deletion_vector

    snap = t.latest_snapshot()
    assert snap is not None and snap.index_manifest
    index_dir = f"{t.store.table_path}/index"
    files = deletion_files(
        t.store.fileio, t.store.manifests.path(snap.index_manifest), lambda e: f"{index_dir}/{e.file_name}"
    )
    return {
        name: read_deletion_vector(t.store.fileio, d, name).tolist()
        for per in files.values()
        for name, d in per.items()
    }


def test_append_deletes_write_deletion_vectors(catalog: Catalog) -> None:
    t = _append(catalog, "dv_vec", **{"deletion-vectors.enabled": "true"})
    parquet = {p.name for p in Path(t.store.table_path).rglob("*.parquet")}
    assert t.delete("id = 4").deleted == 1
    snap = t.latest_snapshot()
    assert snap is not None and snap.commit_kind == "APPEND" and snap.delta_record_count == 0
    assert {p.name for p in Path(t.store.table_path).rglob("*.parquet")} == parquet  # no file rewritten
    assert list(_vectors(t).values()) == [[0]]  # the first row of partition b's second file
    # A second delete in the same file grows its vector; an update deletes the old version and appends the new.
    assert t.delete("id = 5").deleted == 1
    assert t.update({"v": "v * 10"}, "id = 3").updated == 1
    assert sorted(_vectors(t).values()) == [[0], [0, 1]]
    assert _rows(t) == [(1, "a", 10), (2, "a", 20), (3, "b", 300)]
    result = (
        t.merge(pa.table({"id": [1, 7], "v": [11, 70], "dt": ["a", "a"]}), on="id")
        .when_matched_delete()
        .when_not_matched_insert_all()
        .execute()
    )
    assert (result.deleted, result.inserted, result.vectors_written, result.files_rewritten) == (1, 1, 1, 0)
    assert _rows(t) == [(2, "a", 20), (3, "b", 300), (7, "a", 70)]
    # A partition delete over files with vectors deletes through the vectors too (none is left behind).
    assert t.delete("dt = 'b'").deleted == 1
    assert _rows(t) == [(2, "a", 20), (7, "a", 70)]
    # Table.diff sees changes made by vectors alone (no file differs), with the rows they deleted.
    changes = t.diff(2, 3).to_pylist()
    assert changes == [{"rowkind": "-D", "id": 4, "dt": "b", "v": 40}]
    last = t.latest_snapshot()
    assert last is not None
    # Compaction applies the vectors and drops them: it changes no row, so a diff across it is empty.
    t.maintenance.compact()
    assert _rows(t) == [(2, "a", 20), (7, "a", 70)]
    assert t.diff(last.id, t.latest_snapshot().id).num_rows == 0  # type: ignore[union-attr]


def test_a_deletion_vector_delete_conflicts_with_a_concurrent_one(catalog: Catalog) -> None:
    t = _append(catalog, "dv_race", **{"deletion-vectors.enabled": "true"})
    from pyspark_paimon.datasource.dml import dml

    real_write = dml.apply_change
    raced = []

    def racing_write(store, schema, target, *args: Any) -> Any:  # type: ignore[no-untyped-def]
        if not raced:
            raced.append(True)
            dml.delete_rows(store, "id = 1")  # another delete writes a vector in the same bucket first
        return real_write(store, schema, target, *args)

    dml.apply_change = racing_write
    try:
        with pytest.raises(CommitConflictError, match="deletion vectors of bucket 0"):
            t.delete("id = 2")
    finally:
        dml.apply_change = real_write
    assert _rows(t) == [(2, "a", 20), (3, "b", 30), (4, "b", 40), (5, "b", 50)]
    index_files = {p.name for p in Path(t.store.table_path, "index").iterdir()}
    assert len(index_files) == 1  # the failed delete's index file was removed
    assert t.delete("id = 2").deleted == 1  # re-running is safe
    assert _rows(t) == [(3, "b", 30), (4, "b", 40), (5, "b", 50)]


# ------------------------------------------------------------------------------------------- append tables
def test_append_copy_on_write(catalog: Catalog) -> None:
    t = _append(catalog, "ap")
    assert t.delete("id = 3").deleted == 1
    snap = t.latest_snapshot()
    assert snap is not None and snap.commit_kind == "OVERWRITE"
    assert _rows(t) == [(1, "a", 10), (2, "a", 20), (4, "b", 40), (5, "b", 50)]
    # Only the touched file was rewritten: partition a's file is untouched.
    assert t.update({"v": "CASE WHEN v > 40 THEN v - 1 ELSE v END"}, "dt = 'b'").updated == 2
    assert _rows(t) == [(1, "a", 10), (2, "a", 20), (4, "b", 40), (5, "b", 49)]
    result = (
        t.merge(pa.table({"id": [1, 9], "v": [100, 900], "dt": ["a", "c"]}), on="id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete("target.v > 45")
        .execute()
    )
    assert (result.updated, result.inserted, result.deleted) == (1, 1, 1)
    assert _rows(t) == [(1, "a", 100), (2, "a", 20), (4, "b", 40), (9, "c", 900)]
    assert t.delete("true").deleted == 4
    assert _rows(t) == []


def test_a_partition_delete_removes_whole_files_unread(catalog: Catalog) -> None:
    t = _append(catalog, "ap_part")
    from pyspark_paimon.datasource.dml import dml

    def no_reads(*args: Any) -> Any:
        raise AssertionError("a partition delete must not read rows")

    real_load = dml.load_target
    dml.load_target = no_reads
    try:
        assert t.delete("dt = 'b'").deleted == 3
    finally:
        dml.load_target = real_load
    snap = t.latest_snapshot()
    assert snap is not None and snap.commit_kind == "OVERWRITE" and snap.delta_record_count == -3
    assert _rows(t) == [(1, "a", 10), (2, "a", 20)]
    assert t.delete("dt = 'zz'").deleted == 0


def test_copy_on_write_conflicts_with_a_concurrent_removal(catalog: Catalog) -> None:
    """A commit that removed a file this DML rewrites makes the DML fail with nothing changed."""
    t = _append(catalog, "race")
    from pyspark_paimon.datasource.dml import dml

    real_write = dml.apply_change

    def racing_write(store, schema, target, *args: Any) -> Any:  # type: ignore[no-untyped-def]
        split, f = target.files[0]
        FileStoreCommit(store, schema.options).commit(
            [CommitMessage(split.partition, split.bucket, split.total_buckets, (), (f,))], kind="OVERWRITE"
        )
        return real_write(store, schema, target, *args)

    def data_files() -> set[str]:
        return {p.name for p in Path(t.store.table_path).rglob("*.parquet")}

    before = data_files()
    dml.apply_change = racing_write
    try:
        with pytest.raises(CommitConflictError, match="no longer live"):
            t.delete("v > 0")
    finally:
        dml.apply_change = real_write
    latest = t.latest_snapshot()
    assert latest is not None and latest.id == 3  # the racing commit; the DML committed nothing
    assert data_files() == before  # the DML's new files were removed with its failed commit
    entries = t.store.manifests.read_entries(t.store.manifests.read_list(latest.delta_manifest_list))
    assert [e.kind for e in entries] == [KIND_DELETE]


def test_dml_on_a_branch_leaves_main_unchanged(catalog: Catalog) -> None:
    main = _pk(catalog, "br")
    main.branches.create("fix")
    fix = main.on_branch("fix")
    before = _rows(main)
    assert fix.delete("id = 1").deleted == 1
    assert fix.update({"s": "'u'"}, "id = 2").updated == 1
    assert _rows(main) == before
    assert _rows(fix) == [(2, "a", 20, "u"), (3, "b", 30, "z"), (4, "b", 40, "w")]


def test_merge_refuses_duplicate_source_keys_and_bad_expressions(catalog: Catalog) -> None:
    t = _pk(catalog, "dups")
    dup = pa.table({"id": [1, 1], "dt": ["a", "a"], "v": [1, 2], "s": ["p", "q"]})
    with pytest.raises(DmlError, match="more than once"):
        t.merge(dup, on=["id", "dt"]).when_matched_update_all().execute()
    one = dup.slice(0, 1)
    with pytest.raises(OptionError, match="ambiguous"):
        t.merge(one, on=["id", "dt"]).when_matched_update({"v": "v + 1"}).execute()
    with pytest.raises(OptionError, match="not supported"):
        t.update({"v": "(SELECT 1)"})


@pytest.mark.parametrize("primary_key", [True, False], ids=["pk", "append"])
def test_decimal_columns_take_rounded_doubles(catalog: Catalog, primary_key: bool) -> None:
    """A DECIMAL(10, 2) column takes a DOUBLE expression whose shortest decimal has two fraction digits: the
    ``round(amount / 100, 2)`` a refused update's message leads to (issue 32); the unrounded one is refused naming
    the value, and a merge's DOUBLE source values go in the same way."""
    t = catalog.create_table(
        f"db.money_{primary_key}",
        "id BIGINT, amount DECIMAL(10, 2)",
        primary_keys=["id"] if primary_key else [],
        options={"bucket": "1"} if primary_key else {},
    )
    t.write_arrow(pa.table({"id": [1, 2, 3], "amount": [199_999.99, 184_660.0, 30_000_037.0]}))  # doubles
    with pytest.raises(SchemaMismatchError, match=r"holds 1999\.9998999999998, which a DECIMAL\(10, 2\) column"):
        t.update({"amount": "amount / 100"})  # '/' divides as DOUBLE: 199999.99 / 100 is 1999.9998999999998
    t.update({"amount": "round(amount / 100, 2)"})
    money = {r["id"]: r["amount"] for r in t.scan().to_arrow().to_pylist()}
    assert money == {1: Decimal("2000.00"), 2: Decimal("1846.60"), 3: Decimal("300000.37")}
    if primary_key:
        source = pa.table({"id": [2, 4], "amount": [19.99, 0.1 + 0.7]})  # 0.7999999999999999: refused
        with pytest.raises(SchemaMismatchError, match=r"holds 0\.7999999999999999"):
            t.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
        source = pa.table({"id": [2, 4], "amount": [19.99, 0.8]})
        t.merge(source, on="id").when_matched_update_all().when_not_matched_insert_all().execute()
        money = {r["id"]: r["amount"] for r in t.scan().to_arrow().to_pylist()}
        assert money == {1: Decimal("2000.00"), 2: Decimal("19.99"), 3: Decimal("300000.37"), 4: Decimal("0.80")}


# ------------------------------------------------------------------------------------------- model check
@pytest.mark.parametrize("primary_key", [True, False], ids=["pk", "append"])
def test_random_dml_matches_a_dict_model(catalog: Catalog, primary_key: bool) -> None:
    """Random deletes, updates and merges against a plain dict ``id -> (dt, v)``."""
    rng = random.Random(24)
    name = "model_pk" if primary_key else "model_ap"
    t = catalog.create_table(
        f"db.{name}",
        "id BIGINT, dt STRING, v BIGINT",
        partition_keys=["dt"],
        primary_keys=["id", "dt"] if primary_key else [],
        options={"bucket": "2"} if primary_key else {"bucket": "2", "bucket-key": "id"},
    )
    model: dict[int, tuple[str, int]] = {}

    def dt_of(i: int) -> str:
        return "ab"[i % 2]

    for step in range(8):
        op = rng.choice(["merge", "delete", "update", "merge"])
        if op == "delete":
            lo = rng.randrange(0, 30)
            assert t.delete(f"id >= {lo} AND id < {lo + 5}").deleted == sum(1 for k in model if lo <= k < lo + 5), step
            model = {k: v for k, v in model.items() if not lo <= k < lo + 5}
        elif op == "update":
            d = rng.randrange(1, 9)
            assert t.update({"v": f"v + {d}"}, "dt = 'a'").updated == sum(1 for v in model.values() if v[0] == "a")
            model = {k: (p, v + d if p == "a" else v) for k, (p, v) in model.items()}
        else:
            ids = sorted(rng.sample(range(30), 6))
            vals = [rng.randrange(100) for _ in ids]
            src = pa.table({"id": ids, "dt": [dt_of(i) for i in ids], "v": vals})
            res = (
                t.merge(src, on="id")
                .when_matched_delete("source.v < 20")
                .when_matched_update({"v": "source.v"})
                .when_not_matched_insert_all()
                .execute()
            )
            want_del = sum(1 for i, v in zip(ids, vals) if i in model and v < 20)
            assert res.deleted == want_del, step
            for i, v in zip(ids, vals):
                if i in model and v < 20:
                    del model[i]
                else:
                    model[i] = (dt_of(i), v)
        assert _rows(t) == sorted((k, p, v) for k, (p, v) in model.items()), step


# ------------------------------------------------------------------------------------------- pruning
def test_merge_reads_only_what_its_source_keys_can_touch(catalog: Catalog) -> None:
    """A merge without by-source clauses prunes its target read by the source's keys: a primary-key table's
    key fixes the bucket (one of four read), and an append table's file statistics drop files outside the
    keys' range (one of two read); ``MergeResult.files_read`` counts what was read."""
    pk = catalog.create_table("db.prune_pk", "id BIGINT, v BIGINT", primary_keys=["id"], options={"bucket": "4"})
    pk.write_arrow(pa.table({"id": list(range(40)), "v": [0] * 40}))
    source = pa.table({"id": [7], "v": [70]})
    result = pk.merge(source, on="id").when_matched_update_all().execute()
    assert (result.updated, result.files_read) == (1, 1)
    assert dict(zip(*[pk.scan().to_arrow().column(c).to_pylist() for c in ("id", "v")]))[7] == 70

    app = catalog.create_table("db.prune_app", "id BIGINT, v BIGINT")
    app.write_arrow(pa.table({"id": [1, 2, 3], "v": [0, 0, 0]}))
    app.write_arrow(pa.table({"id": [10, 11, 12], "v": [0, 0, 0]}))
    many = pa.table({"id": list(range(10, 10_020)), "v": [5] * 10_010})  # over the IN limit: pruned by range
    result = app.merge(many, on="id").when_matched_delete().execute()
    assert (result.deleted, result.files_read) == (3, 1)
    assert sorted(app.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
    # A by-source clause needs every target row: nothing is pruned.
    result = app.merge(source, on="id").when_not_matched_by_source_delete("target.id > 2").execute()
    assert (result.deleted, result.files_read) == (1, 1)


# ------------------------------------------------------------------------------------------- live writers
def _race_each_write(t: Table, times: int, rows: pa.Table) -> tuple[Any, list[int]]:
    """Patch ``dml.apply_change`` (what ``delete_rows`` / ``update_rows`` call) so that a plain write of ``rows``
    commits between the change's read and its write, ``times`` times; returns the real function (to restore) and
    the writer's snapshot ids."""
    from pyspark_paimon.datasource.dml import dml

    real_write = dml.apply_change
    landed: list[int] = []

    def racing_write(store, schema, target, *args: Any) -> Any:  # type: ignore[no-untyped-def]
        if len(landed) < times:
            snap = Table.open(t.uri).write_arrow(rows)
            assert snap.snapshot_id is not None
            landed.append(snap.snapshot_id)
        return real_write(store, schema, target, *args)

    dml.apply_change = racing_write
    return real_write, landed


def test_a_pk_change_overtaken_by_a_writer_is_planned_again(catalog: Catalog) -> None:
    """A writer commits keys 1 and 2 after the update read them: the update must not land on top with rows
    computed from (and sequenced before) what the writer replaced; it is read and decided again."""
    from pyspark_paimon.datasource.dml import dml

    t = _pk(catalog, "pk_race")
    writer_rows = pa.table({"id": [1, 2], "dt": ["a", "a"], "v": [100, 200], "s": ["p", "q"]})
    real_write, landed = _race_each_write(t, 1, writer_rows)
    try:
        assert t.update({"v": "v + 1"}, "id <= 2").updated == 2
        assert t.delete("id = 1").deleted == 1
    finally:
        dml.apply_change = real_write
    assert _rows(t) == [(2, "a", 201, "q"), (3, "b", 30, "z"), (4, "b", 40, "w")]
    latest = t.latest_snapshot()
    assert latest is not None and latest.id == landed[0] + 2  # the writer, then the update, then the delete
    live = {e.file.file_name for e in t.store.live_entries(latest)}
    assert {p.name for p in Path(t.store.table_path).rglob("data-*.parquet")} == live  # no attempt left files


def test_a_pk_change_overtaken_every_time_gives_up(catalog: Catalog) -> None:
    from pyspark_paimon.datasource.dml import dml

    t = _pk(catalog, "pk_race_forever")
    writer_rows = pa.table({"id": [1], "dt": ["a"], "v": [100], "s": ["p"]})
    real_write, landed = _race_each_write(t, DML_ATTEMPTS, writer_rows)
    try:
        with pytest.raises(CommitConflictError, match=f"planned {DML_ATTEMPTS} times"):
            t.delete("id = 1")
    finally:
        dml.apply_change = real_write
    latest = t.latest_snapshot()
    assert latest is not None and latest.id == landed[-1]  # only the writer's commits landed
    assert _rows(t)[0] == (1, "a", 100, "p")


def test_a_pk_change_is_not_planned_again_for_a_writer_of_other_rows(catalog: Catalog) -> None:
    """A commit that cannot hold rows the change read or keys it writes (another partition, keys outside the
    filter) does not make the change start over, so DML keeps working under a busy writer of other rows."""
    from pyspark_paimon.datasource.dml import dml

    t = _pk(catalog, "pk_race_elsewhere")
    writer_rows = pa.table({"id": [9], "dt": ["b"], "v": [90], "s": ["w"]})
    real_write, landed = _race_each_write(t, DML_ATTEMPTS, writer_rows)
    try:
        assert t.update({"v": "v + 1"}, "id <= 2").updated == 2
    finally:
        dml.apply_change = real_write
    assert len(landed) == 1  # one attempt: the writer's commit did not send it back
    assert _rows(t) == [(1, "a", 11, "x"), (2, "a", 21, "y"), (3, "b", 30, "z"), (4, "b", 40, "w"), (9, "b", 90, "w")]


def test_a_writer_moving_a_key_out_of_the_filter_sends_the_change_back(catalog: Catalog) -> None:
    """The writer's new row for key 2 no longer matches ``v < 25``, but the update read and writes key 2 (its
    write's key range overlaps the writer's file even where value statistics would rule that file out), so the
    update is decided again and leaves key 2 alone."""
    from pyspark_paimon.datasource.dml import dml

    t = _pk(catalog, "pk_race_filter")
    writer_rows = pa.table({"id": [2], "dt": ["a"], "v": [200], "s": ["w"]})
    real_write, landed = _race_each_write(t, 1, writer_rows)
    try:
        assert t.update({"v": "v + 1"}, "v < 25").updated == 1
    finally:
        dml.apply_change = real_write
    assert _rows(t)[:2] == [(1, "a", 11, "x"), (2, "a", 200, "w")]


def test_a_write_prepared_before_a_delete_and_committed_after_it_keeps_its_row(catalog: Catalog) -> None:
    from pyspark_paimon.datasource.jobs import prepare_write

    t = _pk(catalog, "pk_late_writer")
    job = prepare_write(t.store)  # the writer starts: its sequence numbers follow the table as it is now
    writer = job.new_writer("late")
    writer.write(pa.table({"id": [2], "dt": ["a"], "v": [99], "s": ["late"]}))
    messages = writer.prepare_commit()
    assert t.delete("dt = 'a'").deleted == 2  # retracts keys 1 and 2 (key 2 with the higher sequence number)
    job.commit(messages)  # the writer's commit lands after the delete: its row for key 2 must be the live one
    assert _rows(t) == [(2, "a", 99, "late"), (3, "b", 30, "z"), (4, "b", 40, "w")]
