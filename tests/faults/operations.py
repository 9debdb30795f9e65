"""The operations the fault harness sweeps: one :class:`~tests.faults.harness.Operation` per engine write path.

Each builds table ``db.t`` through the public API, runs one operation on it, and says what its effect looks like
(the view). Everything goes through ``Catalog`` / ``Table`` and their namespaces, except the two Spark sinks,
whose micro-batch and batch commits are driven in this process through the adapters' own writer classes
(``PaimonStreamWriter`` / ``PaimonWriter``: ``write`` as a task would, then ``commit``, and ``abort`` when the
commit raises, as Spark does), because Spark's executors cannot see the ``faulty://`` store.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from typing import Any, Callable

import pyarrow as pa

from pyspark_paimon import Catalog, Table
from tests.faults import store
from tests.faults.harness import TABLE, Baseline, Context, Operation, View

SCHEMA = "k bigint, v string, dt string"
D1, D2 = "20250810", "20250811"
TODAY = dt.date.today().strftime("%Y%m%d")


def rows_of(keys: list[int], v: str, day: str) -> pa.Table:
    return pa.table(
        {"k": pa.array(keys, pa.int64()), "v": pa.array([v] * len(keys)), "dt": pa.array([day] * len(keys))}
    )


def _sorted_rows(t: Table) -> tuple:
    table = t.scan().to_arrow()
    return tuple(sorted((tuple(r.values()) for r in table.to_pylist()), key=repr))


# -- views ------------------------------------------------------------------------------------------
def branch_rows(t: Table, ctx: Context) -> View:
    """The rows of main and of every branch (so branch creation and drops show too)."""
    out = [("main", _sorted_rows(t))]
    for b in t.branches.list():
        out.append((b.name, _sorted_rows(t.on_branch(b.name))))
    return tuple(out)


def tracked_rows(t: Table, ctx: Context) -> View:
    """Main's rows with their ``_ROW_ID`` (row-tracking tables: a row whose id changed lost its identity)."""
    table = t.scan(read_options={"read.row-tracking-columns": "true"}).to_arrow().drop_columns(["_SEQUENCE_NUMBER"])
    return tuple(sorted((tuple(r.values()) for r in table.to_pylist()), key=repr))


def tags_of(t: Table) -> tuple:
    out = [("main", tuple((tag.name, tag.snapshot.id) for tag in t.tags.list()))]
    for b in t.branches.list():
        out.append((b.name, tuple((tag.name, tag.snapshot.id) for tag in t.on_branch(b.name).tags.list())))
    return tuple(out)


def rows_and_tags(t: Table, ctx: Context) -> View:
    return (branch_rows(t, ctx), tags_of(t))


def rows_and_new_kinds(t: Table, ctx: Context) -> View:
    """Rows, and which commit kinds landed on main since the setup (a compaction that landed adds COMPACT)."""
    since = ctx.setup_latest["main"]
    return (branch_rows(t, ctx), frozenset(s.commit_kind for s in t.snapshots() if s.id > since))


def rows_and_schema(t: Table, ctx: Context) -> View:
    return (branch_rows(t, ctx), tuple(f.name for f in t.schema.fields))


def rows_snapshots_tags(t: Table, ctx: Context) -> View:
    return (branch_rows(t, ctx), tuple(s.id for s in t.snapshots()), tags_of(t))


def expired_prefix(view: View, base: Baseline) -> str | None:
    """An interrupted expiration may have expired the oldest snapshots only: same rows and tags, and the
    snapshot ids a suffix of the setup's that still holds the clean run's."""
    rows, ids, tags = view  # type: ignore[misc]
    _, before_ids, _ = base.before  # type: ignore[misc]
    _, after_ids, _ = base.after  # type: ignore[misc]
    if (rows, tags) != (base.before[0], base.before[2]) or ids in (before_ids, after_ids):  # type: ignore[index]
        return None
    if ids == before_ids[len(before_ids) - len(ids) :] and set(after_ids) <= set(ids):
        return "partial"
    return None


# -- setups -----------------------------------------------------------------------------------------
def pk_table(catalog: Catalog, **options: str) -> Table:
    return catalog.create_table(
        TABLE, SCHEMA, partition_keys=["dt"], primary_keys=["dt", "k"], options={"bucket": "2", **options}
    )


def append_table(catalog: Catalog, **options: str) -> Table:
    return catalog.create_table(TABLE, SCHEMA, partition_keys=["dt"], options=options)


def tracked_table(catalog: Catalog, **options: str) -> Table:
    return append_table(catalog, **{"row-tracking.enabled": "true", **options})


def evolution_table(catalog: Catalog, **options: str) -> Table:
    return tracked_table(catalog, **{"data-evolution.enabled": "true", **options})


def two_writes(t: Table) -> None:
    t.write_arrow(rows_of([1, 2, 3], "a", D1))
    t.write_arrow(rows_of([1, 4], "b", D2))


def setup_with(make: Callable[..., Table], **options: str) -> Callable[[Catalog], None]:
    def setup(catalog: Catalog) -> None:
        two_writes(make(catalog, **options))

    return setup


def upsert(t: Table) -> Any:
    return t.write_arrow(pa.concat_tables([rows_of([2, 3, 5], "u", D1), rows_of([1], "u", D2)]))


def follow_up(t: Table) -> Any:
    """A plain write after the retry: it must land on the head every reader sees."""
    return t.write_arrow(rows_of([999], "follow", TODAY))


def many_level0(catalog: Catalog, **options: str) -> None:
    t = pk_table(catalog, **{"bucket": "1", "write-only": "true", **options})
    for i in range(6):
        t.write_arrow(rows_of([i, i + 1, 10], f"w{i}", D1))


def postpone_setup(catalog: Catalog) -> None:
    t = pk_table(catalog, bucket="-2", **{"postpone.batch-write-fixed-bucket": "false"})
    two_writes(t)
    t.write_arrow(rows_of([2, 6], "c", D1))


def small_append_files(catalog: Catalog) -> None:
    t = append_table(catalog)
    for i in range(6):
        t.write_arrow(rows_of([i, i + 10], f"w{i}", D1))


CHAIN_OPTIONS = {
    "bucket": "1",
    "sequence.field": "seq",
    "partition.timestamp-pattern": "$dt",
    "partition.timestamp-formatter": "yyyyMMdd",
}


def chain_setup(catalog: Catalog) -> None:
    t = catalog.create_chain_table(
        TABLE,
        "k bigint, seq bigint, v string, dt string",
        partition_keys=["dt"],
        primary_keys=["dt", "k"],
        options=CHAIN_OPTIONS,
    )

    def put(branch: str, rows: list[tuple]) -> None:
        schema = t.schema.arrow_schema()
        data = pa.table({n: [r[i] for r in rows] for i, n in enumerate(schema.names)}).cast(schema)
        t.on_branch(branch).write_arrow(data)

    put("snapshot", [(1, 1, "s", "20250810"), (2, 1, "s", "20250810")])
    for i, day in enumerate(["20250811", "20250812", "20250813"]):
        put("delta", [(10 + i, 1, "d", day), (1, 2 + i, f"u{day}", day)])


def expire_setup(catalog: Catalog) -> None:
    t = pk_table(catalog, bucket="1")
    t.write_arrow(rows_of([1, 2], "a", D1))
    t.write_arrow(rows_of([3], "b", D1))
    t.tags.create("keep", snapshot_id=2)
    t.write_arrow(rows_of([1, 5], "c", D1), mode="overwrite")
    t.write_arrow(rows_of([6], "d", D2))
    t.write_arrow(rows_of([1, 7], "e", D2), mode="overwrite", overwrite_partition={"dt": D2})


def changelog_setup(catalog: Catalog) -> None:
    t = pk_table(
        catalog,
        bucket="1",
        **{
            "changelog-producer": "input",
            "snapshot.num-retained.min": "1",
            "snapshot.num-retained.max": "2",
            "changelog.num-retained.max": "3",
        },
    )
    for i in range(5):
        t.write_arrow(rows_of([i, 10], f"w{i}", D1))


PARTITION_TTL = {
    "partition.expiration-time": "2 d",
    "partition.timestamp-formatter": "yyyyMMdd",
    "partition.expiration-check-interval": "0 ms",
}


def partition_setup(catalog: Catalog) -> None:
    t = pk_table(catalog, bucket="1")
    t.write_arrow(rows_of([1, 2], "old", "20200101"))
    t.write_arrow(rows_of([3], "old", "20200102"))
    t.write_arrow(rows_of([4], "new", TODAY))
    with t.update_schema() as u:
        u.set_options(PARTITION_TTL)


def write_without_partition_expiry(t: Table) -> Any:
    with t.update_schema() as u:
        u.remove_options(list(PARTITION_TTL))
    return upsert_today(t)


def upsert_today(t: Table) -> Any:
    return t.write_arrow(rows_of([4, 5], "new2", TODAY))


def tag_expire_setup(catalog: Catalog) -> None:
    t = pk_table(catalog, bucket="1", **{"tag.time-expire-enabled": "false"})
    t.write_arrow(rows_of([1, 2], "a", D1))
    t.tags.create("old", time_retained="1 ms")
    t.write_arrow(rows_of([3], "b", D1), mode="overwrite")
    t.tags.create("young")
    t.maintenance.expire_snapshots(retain_max=1, retain_min=1)
    time.sleep(0.01)


PLANTED = (
    "dt=20250810/bucket-0/data-00000000-0000-0000-0000-00000000feed-0.parquet",
    "manifest/manifest-00000000-0000-0000-0000-00000000feed-0",
    "snapshot/.snapshot-9.00000000-0000-0000-0000-00000000feed.tmp",
)


def orphan_setup(catalog: Catalog) -> None:
    t = pk_table(catalog, bucket="1")
    two_writes(t)
    local = store.local_of(t.store.table_path)
    data_dir = f"{local}/dt={D1}/bucket-0"
    old = time.time() - 3 * 86400
    for rel in PLANTED:
        path = f"{local}/{rel}"
        source = sorted(os.listdir(data_dir))[0] if rel.startswith("dt=") else None
        with open(path, "wb") as f:
            f.write(open(f"{data_dir}/{source}", "rb").read() if source else b"half-written")
        os.utime(path, (old, old))


def rows_and_planted(t: Table, ctx: Context) -> View:
    local = f"{ctx.root}/wh/db.db/t"
    return (branch_rows(t, ctx), sum(os.path.exists(f"{local}/{rel}") for rel in PLANTED))


def planted_partly(view: View, base: Baseline) -> str | None:
    rows, planted = view  # type: ignore[misc]
    if rows == base.before[0] and 0 < planted < len(PLANTED):  # type: ignore[index]
        return "partial"
    return None


def branch_setup(catalog: Catalog, *, branch_writes: int = 1, main_writes: int = 1) -> Table:
    t = pk_table(catalog, bucket="1")
    two_writes(t)
    t.branches.create("b")
    for i in range(branch_writes):
        t.on_branch("b").write_arrow(rows_of([10 + i], f"b{i}", D1))
    for i in range(main_writes):
        t.write_arrow(rows_of([20 + i], f"m{i}", D2))
    return t


def dml_merge(t: Table) -> Any:
    source = pa.concat_tables([rows_of([1, 9], "merged", D1), rows_of([4], "merged", D2)])
    return t.merge(source, on=["dt", "k"]).when_matched_update_all().when_not_matched_insert_all().execute()


def schema_change(t: Table) -> Any:
    with t.update_schema() as u:
        u.add_column("note", "string")


# -- the Spark sinks, in this process -----------------------------------------------------------------
def _spark_schema() -> Any:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType(
        [StructField("k", LongType(), False), StructField("v", StringType()), StructField("dt", StringType(), False)]
    )


def stream_batch(t: Table) -> Any:
    """Micro-batch 1 of a streaming query (checkpoint beside the table), as Spark drives the sink."""
    from pyspark_paimon.datasource.spark.streaming import PaimonStreamWriter
    from pyspark_paimon.datasource.table_ref import resolve_table_ref

    ref = resolve_table_ref({"path": t.uri, "checkpointLocation": f"{t.uri}-checkpoint"})
    writer = PaimonStreamWriter(ref, _spark_schema(), False)
    messages = [writer.write(iter(upsert_batches()))]
    try:
        writer.commit(messages, 1)
    except BaseException:
        writer.abort(messages, 1)
        raise


def spark_batch(t: Table) -> Any:
    """A Spark batch write's job commit (one task), as Spark drives the writer: abort when commit raises."""
    from pyspark_paimon.datasource.spark.writer import PaimonWriter
    from pyspark_paimon.datasource.table_ref import resolve_table_ref

    writer = PaimonWriter(resolve_table_ref({"path": t.uri}), _spark_schema(), False)
    messages = [writer.write(iter(upsert_batches()))]
    try:
        writer.commit(messages)
    except BaseException:
        writer.abort(messages)
        raise


def upsert_batches() -> list[pa.RecordBatch]:
    return pa.concat_tables([rows_of([2, 3, 5], "u", D1), rows_of([1], "u", D2)]).to_batches()


def stream_setup(catalog: Catalog) -> None:
    two_writes(pk_table(catalog))


# -- the operations -----------------------------------------------------------------------------------
_ALREADY = r"already exists|already has a column"

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "append",
        setup_with(append_table),
        lambda t: t.write_arrow(pa.concat_tables([rows_of([5, 6], "n", D1), rows_of([7], "n", D2)])),
        branch_rows,
        idempotent=False,
        follow_up=follow_up,
    ),
    Operation("upsert_fixed_bucket", setup_with(pk_table), upsert, branch_rows, follow_up=follow_up),
    Operation("upsert_dynamic_bucket", setup_with(pk_table, bucket="-1"), upsert, branch_rows, follow_up=follow_up),
    Operation(
        "upsert_cross_partition",
        lambda c: two_writes(
            c.create_table(TABLE, SCHEMA, partition_keys=["dt"], primary_keys=["k"], options={"bucket": "-1"})
        ),
        upsert,
        branch_rows,
        follow_up=follow_up,
    ),
    Operation(
        "upsert_deletion_vectors",
        setup_with(pk_table, **{"deletion-vectors.enabled": "true"}),
        upsert,
        branch_rows,
        follow_up=follow_up,
    ),
    Operation("compact_minor", many_level0, lambda t: t.maintenance.compact(), rows_and_new_kinds, follow_up=follow_up),
    Operation(
        "compact_full", many_level0, lambda t: t.maintenance.compact(full=True), rows_and_new_kinds, follow_up=follow_up
    ),
    Operation(
        "compact_deletion_vectors",
        lambda c: many_level0(c, **{"deletion-vectors.enabled": "true"}),
        lambda t: t.maintenance.compact(),
        rows_and_new_kinds,
        follow_up=follow_up,
    ),
    Operation(
        "compact_append",
        small_append_files,
        lambda t: t.maintenance.compact(full=True),
        rows_and_new_kinds,
        follow_up=follow_up,
    ),
    Operation(
        "compact_postpone", postpone_setup, lambda t: t.maintenance.compact(), rows_and_new_kinds, follow_up=follow_up
    ),
    Operation("compact_chain", chain_setup, lambda t: t.chain.compact({"dt": "20250813"}), branch_rows),
    Operation(
        "expire_snapshots",
        expire_setup,
        lambda t: t.maintenance.expire_snapshots(retain_max=2, retain_min=1),
        rows_snapshots_tags,
        classify=expired_prefix,
        follow_up=follow_up,
    ),
    Operation("expire_changelog", changelog_setup, upsert, branch_rows, follow_up=follow_up),
    Operation(
        "expire_partitions",
        partition_setup,
        upsert_today,
        branch_rows,
        partials=(write_without_partition_expiry,),
        quiet_partials=True,
        follow_up=follow_up,
    ),
    Operation("expire_tags", tag_expire_setup, lambda t: t.tags.expire(), rows_and_tags, follow_up=follow_up),
    Operation(
        "remove_orphan_files",
        orphan_setup,
        lambda t: t.maintenance.remove_orphan_files(older_than=int(time.time() * 1000)),
        rows_and_planted,
        classify=planted_partly,
        follow_up=follow_up,
    ),
    Operation(
        "delete_append", setup_with(append_table), lambda t: t.delete("k <= 2"), branch_rows, follow_up=follow_up
    ),
    Operation(
        "delete_append_deletion_vectors",
        setup_with(append_table, **{"deletion-vectors.enabled": "true"}),
        lambda t: t.delete("k <= 2"),
        branch_rows,
        follow_up=follow_up,
    ),
    Operation(
        "update_primary_key",
        setup_with(pk_table),
        lambda t: t.update({"v": "'updated'"}, "k >= 2"),
        branch_rows,
        follow_up=follow_up,
    ),
    Operation("merge_primary_key", setup_with(pk_table), dml_merge, branch_rows, follow_up=follow_up),
    Operation(
        "branch_create",
        lambda c: two_writes(pk_table(c, bucket="1")),
        lambda t: t.branches.create("b"),
        branch_rows,
        already=_ALREADY,
        follow_up=follow_up,
    ),
    Operation("branch_merge", branch_setup, lambda t: t.branches.merge("b"), branch_rows, follow_up=follow_up),
    Operation("branch_publish", branch_setup, lambda t: t.branches.publish("b"), branch_rows, follow_up=follow_up),
    Operation(
        "fast_forward",
        lambda c: branch_setup(c, branch_writes=3, main_writes=0),
        lambda t: t.branches.fast_forward("b"),
        rows_and_tags,
        follow_up=follow_up,
        note="branch head B = H + 3 (H: main's latest)",
    ),
    Operation(
        "fast_forward_near",
        lambda c: branch_setup(c, branch_writes=2, main_writes=0),
        lambda t: t.branches.fast_forward("b"),
        rows_and_tags,
        follow_up=follow_up,
        note="branch head B = H + 2",
    ),
    Operation(
        "replace_main",
        lambda c: branch_setup(c, branch_writes=2, main_writes=1),
        lambda t: t.branches.replace_main("b", keep_previous_as="previous"),
        rows_and_tags,
        already=_ALREADY,
        follow_up=follow_up,
    ),
    Operation(
        "tag_create",
        lambda c: two_writes(pk_table(c, bucket="1")),
        lambda t: t.tags.create("t1"),
        rows_and_tags,
        already=_ALREADY,
        follow_up=follow_up,
    ),
    Operation(
        "schema_change",
        lambda c: two_writes(pk_table(c, bucket="1")),
        schema_change,
        rows_and_schema,
        already=_ALREADY,
    ),
    Operation(
        "update_by_row_id",
        setup_with(evolution_table),
        lambda t: t.write_arrow(pa.table({"_ROW_ID": pa.array([0, 3], pa.int64()), "v": ["x", "y"]}), mode="update"),
        tracked_rows,
        follow_up=follow_up,
    ),
    Operation(
        "upsert_by_key",
        setup_with(evolution_table),
        lambda t: t.write_arrow(rows_of([1, 9], "up", D1), mode="upsert", on=["dt", "k"]),
        tracked_rows,
        follow_up=follow_up,
    ),
    Operation(
        "update_data_evolution",
        setup_with(evolution_table),
        lambda t: t.update({"v": "'updated'"}, "k >= 2"),
        tracked_rows,
        follow_up=follow_up,
    ),
    Operation(
        "delete_row_tracking",
        setup_with(tracked_table),
        lambda t: t.delete("k <= 2"),
        tracked_rows,
        follow_up=follow_up,
    ),
    Operation("stream_micro_batch", stream_setup, stream_batch, branch_rows, follow_up=follow_up),
    Operation("spark_batch_write", stream_setup, spark_batch, branch_rows, follow_up=follow_up),
)

BY_NAME = {op.name: op for op in OPERATIONS}

__all__ = ["BY_NAME", "OPERATIONS"]
