"""``pyspark-paimon``: table maintenance from the command line, without writing Python or starting Spark.

Paimon users know these operations as ``CALL sys.<procedure>(table => ..., ...)``; each subcommand is one such
procedure with the same name and argument names (``--tag``, ``--snapshot``, ``--time_retained``,
``--older_than``...), e.g.::

    pyspark-paimon create_tag --table /wh/db.db/t --tag t1 --snapshot 3
    pyspark-paimon expire_snapshots --warehouse s3://bucket/wh --table db.t --retain_max 10 --fs key=... --fs secret=...

A few subcommands Paimon spells as SQL or does not have are ours: ``list_tags``, ``list_branches``,
``history``, ``replace_main``, ``expire_branches``. Underscores in option names may also be written as
dashes (``--time-retained``).

Every subcommand is a :class:`~pyspark_paimon.cli_args.Procedure` in :data:`PROCEDURES` (the column
commands come from ``cli_schema.py``): its arguments and a function of the opened
:class:`~pyspark_paimon.table.Table` returning rows to print, made from the result the API returns. Adding one is
one more entry. A :class:`~pyspark_paimon.errors.PaimonError` (or a storage ``OSError``) prints
``pyspark-paimon: error: <message>`` and exits 1, without a traceback; bad usage exits 2 (argparse).
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any, Literal, Sequence, get_args

from pyspark_paimon.catalog import Catalog
from pyspark_paimon.cli_args import Arg, Procedure, names, parse_bool, parse_int
from pyspark_paimon.cli_output import (
    TEXT_LINE,
    Row,
    datetime_text,
    duration_text,
    or_nothing,
    print_rows,
    progress_for,
    time_text,
)
from pyspark_paimon.cli_schema import SCHEMA_PROCEDURES
from pyspark_paimon.datasource.versions.branch_merge import ON_CONFLICT
from pyspark_paimon.errors import FilterError, OptionError, PaimonError, TableNotFoundError
from pyspark_paimon.metadata.identifier import split_suffix
from pyspark_paimon.metadata.io.fileio import storage_options_from_strings
from pyspark_paimon.metadata.maintenance.expire import RefDeleteResult
from pyspark_paimon.metadata.refs.graph import ref_graph
from pyspark_paimon.metadata.refs.tags import AT_OR_AFTER, AT_OR_BEFORE, TIMESTAMP_RULES
from pyspark_paimon.planner.read_options import parse_timestamp_millis
from pyspark_paimon.table import Table

PROG = "pyspark-paimon"

CompactStrategy = Literal["full", "minor"]
"""``compact --compact_strategy``, as Paimon's procedure: ``'full'`` (every bucket to the max level) or ``'minor'``
(Paimon's universal rules decide what to merge)."""


def _instant(text: str | None, name: str) -> int | None:
    """An instant argument: epoch ms or 'yyyy-MM-dd HH:mm:ss[.SSS]' in the local time zone (Paimon's rule)."""
    return None if text is None else parse_timestamp_millis(text, name)


# ------------------------------------------------------------------------------------------- procedures
def _tag_row(tag: Any) -> Row:
    s = tag.snapshot
    return {
        "tag_name": tag.name,
        "snapshot_id": s.id,
        "schema_id": s.schema_id,
        "commit_time": time_text(s.time_millis),
        "record_count": s.total_record_count,
        "create_time": None if tag.create_time is None else tag.create_time.strftime("%Y-%m-%d %H:%M:%S"),
        "time_retained": duration_text(tag.time_retained_ms),
    }


def _create_tag(t: Table, a: argparse.Namespace) -> list[Row]:
    tag = t.tags.create(
        a.tag, snapshot_id=a.snapshot, time_retained=a.time_retained, consumer=a.consumer, offset=a.offset
    )
    return [_tag_row(tag)]


def _create_tag_from_timestamp(t: Table, a: argparse.Namespace) -> list[Row]:
    return [
        _tag_row(
            t.tags.create(
                a.tag,
                timestamp=_instant(a.timestamp, "timestamp"),
                time_retained=a.time_retained,
                timestamp_rule=a.timestamp_rule,
            )
        )
    ]


def _replace_tag(t: Table, a: argparse.Namespace) -> list[Row]:
    return [_tag_row(t.tags.replace(a.tag, snapshot_id=a.snapshot, time_retained=a.time_retained))]


def _ref_rows(results: Sequence[RefDeleteResult], clean_files: bool) -> list[Row]:
    """Rows of tag or branch deletions: one per ref deleted or kept, then (``clean_files``) the files deleted."""
    kind, dry_run = results[0].kind, results[0].dry_run
    rows: list[Row] = [
        {kind: n, "action": "would delete" if dry_run else "deleted"} for r in results for n in r.deleted
    ]
    rows += [{kind: n, "action": f"kept: {why}"} for r in results for n, why in r.kept.items()]
    if not rows:
        rows.append({kind: "(none)", "action": f"no {kind} was due; nothing deleted"})
    elif clean_files:
        data = sum(len(r.deleted_data_files) for r in results)
        manifests = sum(len(r.deleted_manifests) for r in results)
        done = "to delete" if dry_run else "deleted"
        rows.append({kind: "(files)", "action": f"{data} data files, {manifests} manifests {done}"})
    return rows


def _delete_tag(t: Table, a: argparse.Namespace) -> list[Row]:
    return _ref_rows([t.tags.delete(n, clean_files=a.clean_files) for n in names(a.tag)], a.clean_files)


def _rename_tag(t: Table, a: argparse.Namespace) -> list[Row]:
    return [_tag_row(t.tags.rename(a.tag, a.target_tag))]


def _list_tags(t: Table, a: argparse.Namespace) -> list[Row]:
    return [_tag_row(tag) for tag in t.tags.list()]


def _expire_tags(t: Table, a: argparse.Namespace) -> list[Row]:
    r = t.tags.expire(
        older_than=_instant(a.older_than, "older_than"),
        clean_files=a.clean_files,
        dry_run=a.dry_run,
        progress=progress_for(sys.stderr),
    )
    return _ref_rows([r], a.clean_files)


def _branch_row(info: Any) -> Row:
    return {
        "branch_name": info.name,
        "created_from_tag": info.source_tag,
        "created_from_snapshot": info.source_snapshot_id,
        "create_time": time_text(info.create_time_millis),
        "time_retained": duration_text(info.time_retained_millis),
        "expire_time": time_text(info.expire_time_millis),
        "latest_snapshot_id": info.latest_snapshot_id,
    }


def _create_branch(t: Table, a: argparse.Namespace) -> list[Row]:
    timestamp = _instant(a.timestamp, "timestamp")
    sourced = a.from_latest or any(x is not None for x in (a.tag, a.snapshot, timestamp, a.consumer, a.offset))
    info = t.branches.create(
        a.branch,
        tag=a.tag,
        snapshot_id=a.snapshot,
        timestamp=timestamp,
        consumer=a.consumer,
        offset=a.offset,
        empty=not sourced,  # Paimon's create_branch without a source makes an empty branch
        timestamp_rule=a.timestamp_rule,
        time_retained=a.time_retained,
        ignore_if_exists=a.ignoreIfExists,
    )
    return [_branch_row(info)]


def _delete_branch(t: Table, a: argparse.Namespace) -> list[Row]:
    return _ref_rows([t.branches.delete(n, clean_files=a.clean_files) for n in names(a.branch)], a.clean_files)


def _rename_branch(t: Table, a: argparse.Namespace) -> list[Row]:
    return [_branch_row(t.branches.rename(a.from_branch, a.to_branch))]


def _list_branches(t: Table, a: argparse.Namespace) -> list[Row]:
    return [_branch_row(info) for info in t.branches.list()]


def _expire_branches(t: Table, a: argparse.Namespace) -> list[Row]:
    r = t.branches.expire(
        older_than=_instant(a.older_than, "older_than"),
        clean_files=a.clean_files,
        dry_run=a.dry_run,
        progress=progress_for(sys.stderr),
    )
    return _ref_rows([r], a.clean_files)


def _publish_row(r: Any) -> list[Row]:
    return [
        {
            "branch": r.branch,
            "target": r.target,
            "previous_latest_id": r.previous_latest_id,
            "latest_id": r.latest_id,
            "discarded": "; ".join(r.discarded) or None,
            "discarded_snapshots": ",".join(map(str, r.discarded_snapshots)) or None,
            "discarded_tags": ",".join(r.discarded_tags) or None,
            "discarded_records": r.discarded_records,
            "kept_tags": ",".join(r.kept_tags) or None,
            "kept_previous_as": r.kept_previous_as,
        }
    ]


def _fast_forward(t: Table, a: argparse.Namespace) -> list[Row]:
    r = t.branches.fast_forward(a.branch, force=a.force)
    same = r.previous_latest_id == r.latest_id and not (r.discarded or r.discarded_snapshots or r.discarded_tags)
    nothing = f"nothing to fast-forward: '{r.target}' is already at '{r.branch}' (snapshot {r.latest_id})"
    return or_nothing(a, _publish_row(r), nothing if same else None)


def _merge_row(r: Any) -> list[Row]:
    return [
        {
            "source": r.source,
            "into": r.into,
            "base": r.base,
            "upserted": r.upserted,
            "deleted": r.deleted,
            "files_added": r.files_added,
            "files_removed": r.files_removed,
            "conflicts": r.conflicts,
            "snapshot_id": r.snapshot_id,
        }
    ]


def _merged(a: argparse.Namespace, r: Any, what: str) -> list[Row]:
    nothing = None
    if r.snapshot_id is None:
        kept = f"; {r.conflicts} conflicting key(s) kept as '{r.into}' has them" if r.conflicts else ""
        nothing = f"nothing to {what}: '{r.source}' changes nothing in '{r.into}' since their base {r.base}{kept}"
    return or_nothing(a, _merge_row(r), nothing)


def _merge_branch(t: Table, a: argparse.Namespace) -> list[Row]:
    return _merged(a, t.branches.merge(a.branch, into=a.into, on_conflict=a.on_conflict), "merge")


def _cherry_pick(t: Table, a: argparse.Namespace) -> list[Row]:
    version: int | str = int(a.version) if a.version.isdigit() else a.version
    return _merged(a, t.branches.cherry_pick(version, onto=a.onto, on_conflict=a.on_conflict), "cherry-pick")


def _publish_branch(t: Table, a: argparse.Namespace) -> list[Row]:
    return _merged(a, t.branches.publish(a.branch, into=a.into, on_conflict=a.on_conflict), "publish")


def _replace_main(t: Table, a: argparse.Namespace) -> list[Row]:
    return _publish_row(t.branches.replace_main(a.branch, keep_previous_as=a.keep_previous_as))


def _rollback_row(r: Any) -> list[Row]:
    return [
        {
            "previous_snapshot_id": r.previous_snapshot_id,
            "current_snapshot_id": r.current_snapshot_id,
            "deleted_snapshots": ",".join(map(str, r.deleted_snapshots)) or None,
            "deleted_tags": ",".join(r.deleted_tags) or None,
        }
    ]


def _rolled_back(a: argparse.Namespace, r: Any) -> list[Row]:
    same = r.previous_snapshot_id == r.current_snapshot_id and not (r.deleted_snapshots or r.deleted_tags)
    nothing = f"nothing to roll back: snapshot {r.current_snapshot_id} is already the latest"
    return or_nothing(a, _rollback_row(r), nothing if same else None)


def _rollback_to(t: Table, a: argparse.Namespace) -> list[Row]:
    return _rolled_back(a, t.maintenance.rollback_to(snapshot_id=a.snapshot_id, tag=a.tag))


def _rollback(t: Table, a: argparse.Namespace) -> list[Row]:
    """Paimon Spark's ``rollback(table, version | snapshot | tag)``: a version is a tag if one has that name,
    else a snapshot id."""
    given = [x for x in (a.version, a.snapshot, a.tag) if x is not None]
    if len(given) != 1:
        raise OptionError("rollback needs exactly one of --version, --snapshot and --tag.")
    if a.version is not None:
        tag_names = {tag.name for tag in t.tags.list()}
        if a.version in tag_names or not a.version.isdigit():
            return _rolled_back(a, t.maintenance.rollback_to(tag=a.version))
        return _rolled_back(a, t.maintenance.rollback_to(snapshot_id=int(a.version)))
    return _rolled_back(a, t.maintenance.rollback_to(snapshot_id=a.snapshot, tag=a.tag))


def _rollback_to_timestamp(t: Table, a: argparse.Namespace) -> list[Row]:
    """Paimon's ``rollback_to_timestamp``: back to the last snapshot committed at or before the instant."""
    ts = _instant(a.timestamp, "timestamp")
    assert ts is not None  # required argument
    return _rolled_back(a, t.maintenance.rollback_to(timestamp=ts))


def _expire_snapshots(t: Table, a: argparse.Namespace) -> list[Row]:
    if a.retain_max is not None and a.retain_min is None:
        key = "snapshot.num-retained.min"
        retain_min = int(t.options.get(key, "10"))
        if a.retain_max < retain_min:
            source = f"the table option {key}" if key in t.options else f"the default of the table option {key}"
            raise OptionError(
                f"--retain_max {a.retain_max} must be >= retain_min, which is {retain_min} ({source}); pass "
                f"--retain_min N with N <= {a.retain_max} too."
            )
    r = t.maintenance.expire_snapshots(
        retain_max=a.retain_max,
        retain_min=a.retain_min,
        older_than=_instant(a.older_than, "older_than"),
        max_deletes=a.max_deletes,
        dry_run=a.dry_run,
        progress=progress_for(sys.stderr),
    )
    return [
        {
            "expired_snapshots": ",".join(map(str, r.expired_snapshots)) or "none",
            "deleted_data_files": len(r.deleted_data_files),
            "deleted_manifests": len(r.deleted_manifests),
            "dry_run": r.dry_run,
        }
    ]


def _remove_orphan_files(t: Table, a: argparse.Namespace) -> list[Row]:
    r = t.maintenance.remove_orphan_files(
        older_than=_instant(a.older_than, "older_than"), dry_run=a.dry_run, progress=progress_for(sys.stderr)
    )
    rows: list[Row] = [{"orphan_file": f} for f in r.files]
    rows.append({"orphan_file": f"({len(r.files)} files, {r.total_bytes} bytes {'found' if a.dry_run else 'deleted'})"})
    return rows


def _check(t: Table, a: argparse.Namespace) -> list[Row]:
    r = t.maintenance.check(progress=progress_for(sys.stderr))
    rows: list[Row] = [{"damaged": d.describe()} for d in r.damaged]
    intact = ", ".join(f"'{b}': {s}" for b, s in sorted(r.last_intact.items()))
    summary = "intact" if r.ok else f"{len(r.damaged)} damaged"
    totals = f"{r.roots_checked} snapshots and tags, {r.files_checked} files: {summary}"
    rows.append({"damaged": f"({totals}; newest intact snapshot per branch: {intact})"})
    return rows


def _key_values(text: str | None, name: str) -> dict[str, str] | None:
    """Paimon's ``options`` argument: 'k=v,k2=v2'."""
    if not text:
        return None
    out = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"--{name} takes 'key=value,key2=value2', got '{text}'.")
        out[key.strip()] = value.strip()
    return out


def _partition_list(text: str | None) -> list[str] | None:
    """Paimon's ``partitions`` argument: 'k=v,k2=v2;k=v3' (one spec per ';')."""
    return [p.strip() for p in text.split(";") if p.strip()] if text else None


def _compact(t: Table, a: argparse.Namespace) -> list[Row]:
    """Paimon's ``compact(table, partitions, compact_strategy, order_strategy, order_by, options)``:
    ``partitions`` as 'k=v,k2=v2;k=v3', strategy 'full' (every bucket to the max level) or 'minor' (the universal
    rules decide); unset, 'full' unless the table clusters incrementally ('minor'), as Java's Spark
    ``CompactProcedure``. ``order_strategy`` / ``order_by``: a sort compaction. In this process."""
    order = None if a.order_strategy in (None, "", "none") else a.order_strategy
    r = t.maintenance.compact(
        _partition_list(a.partitions),
        full=None if a.compact_strategy is None else a.compact_strategy == "full",
        order_strategy=order,
        order_by=a.order_by,
        options=_key_values(a.options, "options"),
        progress=progress_for(sys.stderr),
    )
    nothing = None if r.snapshot_id is not None else "; ".join(r.notes) or "nothing to compact"
    row = {
        "snapshot_id": r.snapshot_id,
        "buckets": r.buckets,
        "files_before": r.files_before,
        "files_after": r.files_after,
        "rows_before": r.rows_before,
        "rows_after": r.rows_after,
        "notes": "; ".join(r.notes) or None,
    }
    return or_nothing(a, [row], nothing)


def _expire_partitions(t: Table, a: argparse.Namespace) -> list[Row]:
    """Paimon's ``expire_partitions``: one row per dropped partition ('k=v, k2=v2', Java's spelling)."""
    r = t.maintenance.expire_partitions(
        expiration_time=a.expiration_time,
        timestamp_formatter=a.timestamp_formatter,
        timestamp_pattern=a.timestamp_pattern,
        expire_strategy=a.expire_strategy,
        max_expires=a.max_expires,
        options=_key_values(a.options, "options"),
    )
    if not r.partitions:
        return [{"expired_partitions": "No expired partitions."}]
    return [{"expired_partitions": ", ".join(f"{k}={v}" for k, v in p.items())} for p in r.partitions]


def _mark_partition_done(t: Table, a: argparse.Namespace) -> list[Row]:
    r = t.maintenance.mark_partition_done(_partition_list(a.partitions) or [])
    return [{"success_file": p} for p in r.paths]


def _rescale(t: Table, a: argparse.Namespace) -> list[Row]:
    r = t.maintenance.rescale(a.bucket_num, _partition_list(a.partitions))
    return [
        {
            "snapshot_id": r.snapshot.id if r.snapshot else None,
            "bucket_num": r.bucket_num,
            "partitions": r.partitions,
            "rows": r.rows,
            "files_before": r.files_before,
            "files_after": r.files_after,
        }
    ]


def _reset_consumer(t: Table, a: argparse.Namespace) -> list[Row]:
    return [{"result": t.maintenance.reset_consumer(a.consumer_id, a.next_snapshot_id)}]


def _clear_consumers(t: Table, a: argparse.Namespace) -> list[Row]:
    cleared = t.maintenance.clear_consumers(a.including_consumers, a.excluding_consumers)
    return [{"cleared_consumer": c} for c in cleared] or [{"cleared_consumer": None}]


def _rewrite_file_index(t: Table, a: argparse.Namespace) -> list[Row]:
    """Paimon's ``rewrite_file_index(table, partitions)``: every data file (of ``partitions``, 'k=v,k2=v2;k=v3')
    gets the file indexes the table's options name now, in one COMPACT snapshot."""
    parts = [p.strip() for p in a.partitions.split(";") if p.strip()] if a.partitions else None
    r = t.maintenance.rewrite_file_index(parts, progress=progress_for(sys.stderr))
    nothing = (
        None
        if r.snapshot_id is not None
        else "nothing to rewrite: every data file"
        + (" of the partitions given" if parts else "")
        + " already has the file indexes the table's options name (or there is no data file)"
    )
    row = {
        "snapshot_id": r.snapshot_id,
        "files": r.files,
        "in_manifest": r.embedded,
        "index_files": r.index_files,
        "notes": "; ".join(r.notes) or None,
    }
    return or_nothing(a, [row], nothing)


def _delete(t: Table, a: argparse.Namespace) -> list[Row]:
    """Paimon's ``delete`` action (``--where``): the rows the SQL condition selects, in one commit. An error in
    the condition names ``--where``, as the user typed it."""
    try:
        r = t.delete(a.where)
    except FilterError as e:
        if e.text != a.where:
            raise
        raise FilterError("--where", e.text, e.reason) from None
    nothing = None if r.deleted else f"nothing to delete: no row matches {a.where!r}"
    return or_nothing(a, [{"deleted": r.deleted, "snapshot_id": r.snapshot_id}], nothing)


def _history(t: Table, a: argparse.Namespace) -> list[Row]:
    """The branch's snapshots, newest first: when, what kind of commit, rows changed and in total, schema and
    the tags on each; snapshots that expired but a tag preserved are listed too (marked). ``--graph``: every
    branch, ``git log --graph`` style (``t.inspect.refs_graph()``), as text lines (JSON: one row per snapshot)."""
    if a.graph:
        graph = ref_graph(t.store)
        if getattr(a, "json", False):
            rows = [{**r, "commit_time": datetime_text(r["commit_time"])} for r in graph.to_arrow().to_pylist()]
            return rows[: a.limit] if a.limit is not None else rows
        return [{TEXT_LINE: line} for line in graph.text_lines(a.limit)]
    rows = [
        {**row, "commit_time": datetime_text(row["commit_time"]), "tags": ",".join(row["tags"]) or None}
        for row in t.inspect.history().to_pylist()
    ]
    return rows[: a.limit] if a.limit is not None else rows


_RETAINED = Arg(
    "time_retained",
    "how long the ref is kept, e.g. '1 d', '12 h' (default: never expires; tags: "
    "the table's tag.default-time-retained)",
)
_SNAPSHOT = Arg("snapshot", "snapshot id (default: latest)", parse_int, aliases=("snapshot_id",))
_OLDER_THAN = Arg("older_than", "an instant: epoch ms or 'yyyy-MM-dd HH:mm:ss' (local time)")
_ON_CONFLICT = Arg(
    "on_conflict",
    "keys changed differently on both sides: fail (default), source or target",
    default="fail",
    choices=ON_CONFLICT,
)
_DRY_RUN = Arg("dry_run", "only report what would be deleted", flag=True)
_CLEAN = Arg(
    "clean_files",
    "also delete the files only the deleted refs kept alive (default true, as Java's tag procedures)",
    type=parse_bool,
    default=True,
    flag=True,
)
_CLEAN_BRANCH = Arg(
    "clean_files",
    "also delete the files only the deleted branches kept alive (default false: metadata only, as Paimon's "
    "delete_branch; remove_orphan_files reclaims the rest)",
    type=parse_bool,
    flag=True,
)


_CONSUMER = Arg("consumer", "make the ref where this stream consumer has read up to (its last consumed snapshot)")
_OFFSET = Arg(
    "offset",
    "make the ref at the table as it was this long ago, e.g. '-1 d', '-30 min' (Databend's AT (OFFSET => ...))",
)


def _rule(default: str, why: str) -> Arg:
    return Arg(
        "timestamp_rule",
        f"which snapshot an instant selects (default {default}: {why})",
        default=default,
        choices=TIMESTAMP_RULES,
    )


PROCEDURES: tuple[Procedure, ...] = (
    *SCHEMA_PROCEDURES,
    Procedure(
        "create_tag",
        "create a tag of the latest snapshot, of --snapshot, at a --consumer's position or an --offset ago",
        (Arg("tag", "tag name", required=True), _SNAPSHOT, _RETAINED, _CONSUMER, _OFFSET),
        _create_tag,
    ),
    Procedure(
        "create_tag_from_timestamp",
        "create a tag of the snapshot an instant selects",
        (
            Arg("tag", "tag name", required=True),
            Arg("timestamp", "epoch ms or 'yyyy-MM-dd HH:mm:ss'", required=True),
            _RETAINED,
            _rule(AT_OR_AFTER, "Paimon's rule"),
        ),
        _create_tag_from_timestamp,
    ),
    Procedure(
        "replace_tag",
        "point an existing tag at the latest snapshot or at --snapshot",
        (Arg("tag", "tag name", required=True), _SNAPSHOT, _RETAINED),
        _replace_tag,
    ),
    Procedure(
        "delete_tag",
        "delete tags (comma-separated)",
        (Arg("tag", "tag name(s), comma-separated", required=True), _CLEAN),
        _delete_tag,
    ),
    Procedure(
        "rename_tag",
        "rename a tag",
        (Arg("tag", "tag name", required=True), Arg("target_tag", "new name", required=True)),
        _rename_tag,
    ),
    Procedure("list_tags", "list the tags (Paimon's $tags)", (), _list_tags),
    Procedure(
        "expire_tags",
        "delete tags past their retention (and, with --older_than, all created before it)",
        (_OLDER_THAN, _CLEAN, _DRY_RUN),
        _expire_tags,
    ),
    Procedure(
        "create_branch",
        "create a branch: from --tag, --snapshot, --timestamp, --consumer, --offset, the latest snapshot, or empty",
        (
            Arg("branch", "branch name", required=True),
            Arg("tag", "tag to branch from"),
            Arg("snapshot", "snapshot id to branch from", parse_int),
            Arg("timestamp", "branch the snapshot this instant selects (epoch ms or 'yyyy-MM-dd HH:mm:ss')"),
            _rule(AT_OR_BEFORE, "the table as of the instant"),
            _CONSUMER,
            _OFFSET,
            Arg("from_latest", "branch the latest snapshot", flag=True),
            _RETAINED,
            Arg("ignoreIfExists", "do nothing if the branch exists", flag=True, aliases=("ignore_if_exists",)),
        ),
        _create_branch,
    ),
    Procedure(
        "delete_branch",
        "delete branches (comma-separated; metadata only unless --clean_files, as Paimon)",
        (Arg("branch", "branch name(s), comma-separated", required=True), _CLEAN_BRANCH),
        _delete_branch,
    ),
    Procedure(
        "rename_branch",
        "rename a branch",
        (Arg("from_branch", "current name", required=True), Arg("to_branch", "new name", required=True)),
        _rename_branch,
    ),
    Procedure("list_branches", "list the branches with their origin and retention", (), _list_branches),
    Procedure(
        "expire_branches",
        "delete branches past their retention (and, with --older_than, all created before "
        "it), and the files nothing else reaches",
        (_OLDER_THAN, _CLEAN, _DRY_RUN),
        _expire_branches,
    ),
    Procedure(
        "fast_forward",
        "publish a branch into the table's branch (main unless $branch_x)",
        (
            Arg("branch", "branch to publish", required=True),
            Arg("force", "discard what the target holds that the branch lacks", flag=True),
        ),
        _fast_forward,
    ),
    Procedure(
        "replace_main",
        "make the table's branch an exact copy of another branch",
        (
            Arg("branch", "branch to copy", required=True),
            Arg("keep_previous_as", "save the previous state as this new branch first"),
        ),
        _replace_main,
    ),
    Procedure(
        "merge_branch",
        "three-way merge of a branch into another (by key; append tables by data file), one commit",
        (
            Arg("branch", "branch to merge", required=True),
            Arg("into", "branch to merge into (default: the table's branch)"),
            _ON_CONFLICT,
        ),
        _merge_branch,
    ),
    Procedure(
        "cherry_pick",
        "apply one commit's changes (snapshot id, tag or <branch>.<id>) onto a branch by key, one commit",
        (
            Arg("version", "the commit to pick", required=True),
            Arg("onto", "branch to apply it to (default: the table's branch)"),
            _ON_CONFLICT,
        ),
        _cherry_pick,
    ),
    Procedure(
        "publish_branch",
        "safe publish: one ordinary commit on the target (the branch head, or the three-way merge if it moved)",
        (
            Arg("branch", "branch to publish", required=True),
            Arg("into", "branch to publish into (default: the table's branch)"),
            _ON_CONFLICT,
        ),
        _publish_branch,
    ),
    Procedure(
        "rollback_to",
        "roll back to a snapshot or tag (newer snapshots and tags are deleted)",
        (
            Arg("tag", "tag to roll back to"),
            Arg("snapshot_id", "snapshot id to roll back to", parse_int, aliases=("snapshot",)),
        ),
        _rollback_to,
    ),
    Procedure(
        "rollback",
        "roll back to a version (a tag, else a snapshot id), as Paimon Spark's rollback",
        (Arg("version", "tag name or snapshot id"), Arg("snapshot", "snapshot id", parse_int), Arg("tag", "tag name")),
        _rollback,
    ),
    Procedure(
        "rollback_to_timestamp",
        "roll back to the last snapshot committed at or before an instant",
        (Arg("timestamp", "epoch ms or 'yyyy-MM-dd HH:mm:ss'", required=True),),
        _rollback_to_timestamp,
    ),
    Procedure(
        "expire_snapshots",
        "expire old snapshots (unset arguments come from the snapshot.* options)",
        (
            Arg("retain_max", "keep at most this many snapshots", parse_int),
            Arg("retain_min", "keep at least this many snapshots", parse_int),
            _OLDER_THAN,
            Arg("max_deletes", "expire at most this many snapshots", parse_int),
            _DRY_RUN,
        ),
        _expire_snapshots,
    ),
    Procedure(
        "remove_orphan_files",
        "delete files no snapshot, tag or branch references (default: older than 1 d)",
        (_OLDER_THAN, _DRY_RUN),
        _remove_orphan_files,
    ),
    Procedure(
        "check",
        "check that every file any snapshot, tag or changelog of any branch references is there; names the damaged "
        "ones and the newest intact snapshot of each branch (exit status 0 either way)",
        (),
        _check,
    ),
    Procedure(
        "compact",
        "compact the branch in one COMPACT snapshot, in this process (t.maintenance.compact(spark=...) runs it on "
        "a cluster)",
        (
            Arg("partitions", "partitions to compact, 'k=v,k2=v2;k=v3' (default: all)"),
            Arg(
                "compact_strategy",
                "'full': every bucket to the max level; 'minor': Paimon's universal rules decide (default: 'full', "
                "or 'minor' for a table with clustering.incremental, as Paimon's Spark procedure)",
                choices=get_args(CompactStrategy),
            ),
            Arg(
                "order_strategy",
                "sort compaction of an unaware-bucket append table: 'zorder', 'hilbert' or 'order' (with order_by)",
                choices=("zorder", "hilbert", "order", "none"),
            ),
            Arg("order_by", "the columns a sort compaction orders by, 'x,y'"),
            Arg("options", "table options for this compaction only, 'k=v,k2=v2' (e.g. 'target-file-size=64 mb')"),
        ),
        _compact,
    ),
    Procedure(
        "expire_partitions",
        "drop the partitions that have expired now (OVERWRITE commits; docs/maintenance.md)",
        (
            Arg("expiration_time", "how old a partition may get, e.g. '7 d' (default: partition.expiration-time)"),
            Arg("timestamp_formatter", "how partition values read as a time, e.g. 'yyyyMMdd'"),
            Arg("timestamp_pattern", "which partition columns form the time, e.g. '$dt $hour:00:00'"),
            Arg(
                "expire_strategy",
                "'values-time' (the default) or 'update-time'",
                choices=("values-time", "update-time"),
            ),
            Arg("max_expires", "drop at most this many partitions", type=parse_int),
            Arg("options", "more partition.* options for this call, 'k=v,k2=v2'"),
        ),
        _expire_partitions,
    ),
    Procedure(
        "mark_partition_done",
        "mark partitions done by partition.mark-done-action ('success-file': <partition>/_SUCCESS)",
        (Arg("partitions", "the partitions, 'k=v,k2=v2;k=v3'", required=True),),
        _mark_partition_done,
    ),
    Procedure(
        "rescale",
        "rewrite partitions into a new number of buckets, one OVERWRITE commit (Paimon 1.4)",
        (
            Arg("bucket_num", "the new number of buckets (default: the table's 'bucket')", type=parse_int),
            Arg("partitions", "partitions to rescale, 'k=v,k2=v2;k=v3' (default: all)"),
        ),
        _rescale,
    ),
    Procedure(
        "reset_consumer",
        "set a streaming consumer's next snapshot, or delete the consumer without one",
        (
            Arg("consumer_id", "the consumer", required=True, aliases=("consumerId",)),
            Arg("next_snapshot_id", "its next snapshot (must exist)", type=parse_int, aliases=("nextSnapshotId",)),
        ),
        _reset_consumer,
    ),
    Procedure(
        "clear_consumers",
        "delete the streaming consumers whose id matches a regular expression",
        (
            Arg(
                "including_consumers",
                "ids to delete (regular expression; default all)",
                aliases=("includingConsumers",),
            ),
            Arg("excluding_consumers", "ids to keep (regular expression)", aliases=("excludingConsumers",)),
        ),
        _clear_consumers,
    ),
    Procedure(
        "rewrite_file_index",
        "give every data file the bloom-filter / bitmap indexes the table's file-index.* options name now, in "
        "one COMPACT snapshot (docs/file-indexes.md)",
        (Arg("partitions", "partitions to re-index, 'k=v,k2=v2;k=v3' (default: all)"),),
        _rewrite_file_index,
    ),
    Procedure(
        "delete",
        "delete the rows a SQL condition selects, in one commit (Paimon's delete action; docs/dml.md)",
        (
            Arg(
                "where",
                "the condition, in the 'filter' read option's grammar, e.g. \"dt = '2024-01-01' AND id < 5\"",
                required=True,
            ),
        ),
        _delete,
    ),
    Procedure(
        "history",
        "the snapshots of the branch, newest first",
        (
            Arg("limit", "show at most this many snapshots", parse_int),
            Arg("graph", "every branch, git log --graph style: lanes, fork points, tags, consumers", flag=True),
        ),
        _history,
    ),
)


# ------------------------------------------------------------------------------------------- main
def _storage_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``--fs key=value`` pairs as fsspec keyword arguments, converted as Spark's ``fs.*`` options are
    (:func:`storage_options_from_strings`: booleans, JSON objects, strings)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise OptionError(f"--fs takes a storage option as key=value, got '{pair}'.")
        out[key.strip()] = value
    return storage_options_from_strings(out)


def open_table(table: str, warehouse: str | None, branch: str | None, storage: dict[str, Any]) -> Table:
    """The table a command names: a table directory (``/wh/db.db/t``, ``s3://...``), or ``db.t`` with
    ``--warehouse``; either may carry ``$branch_<b>``, or give ``--on_branch``."""
    suffix = split_suffix(table)[1]
    if branch and suffix.branch and suffix.branch != branch:
        raise OptionError(
            f"--on_branch '{branch}' and the table's suffix (branch '{suffix.branch}') disagree; give one."
        )
    if warehouse:
        if branch and not suffix.branch:
            table = f"{table}$branch_{branch}"
        return Catalog(warehouse, storage_options=storage).get_table(table)
    try:
        return Table.open(table, branch=branch or None, storage_options=storage)
    except TableNotFoundError as exc:
        base = split_suffix(table)[0]
        if re.fullmatch(r"[\w-]+\.[\w-]+", base):
            raise TableNotFoundError(
                f"{exc} Hint: '{base}' looks like a db.table identifier, which needs --warehouse <root>; "
                "without it --table is a table directory."
            ) from None
        raise


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--table",
        required=True,
        help="table directory (/wh/db.db/t, s3://...) or, with --warehouse, db.table; $branch_<b> addresses a branch",
    )
    common.add_argument("--warehouse", help="warehouse root, when --table is db.table")
    common.add_argument(
        "--on_branch",
        "--on-branch",
        dest="on_branch",
        help="the branch to operate on (default main; the same as a $branch_<b> suffix on --table, "
        "which needs quoting in a shell). Not --branch: Paimon's procedures use that name "
        "for the branch they create or publish",
    )
    common.add_argument(
        "--fs",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="fsspec storage option (repeatable), e.g. --fs anon=false (true/false become booleans)",
    )
    common.add_argument("--json", action="store_true", help="print the result as JSON lines")
    parser = argparse.ArgumentParser(
        prog=PROG, description="Paimon table maintenance (Paimon's CALL sys.<procedure> names and arguments)."
    )
    sub = parser.add_subparsers(dest="procedure", required=True, metavar="PROCEDURE")
    for proc in PROCEDURES:
        p = sub.add_parser(proc.name, parents=[common], help=proc.help, description=proc.help)
        for arg in proc.args:
            arg.add_to(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one procedure; returns the exit status (0 ok, 1 a Paimon or storage error, 2 bad usage)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage error (or the help)
        return int(exc.code or 0)
    proc = next(p for p in PROCEDURES if p.name == args.procedure)
    try:
        table = open_table(args.table, args.warehouse, args.on_branch, _storage_options(args.fs))
        rows = proc.run(table, args)
    except (PaimonError, OSError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    print_rows(rows, args.json)
    return 0


__all__ = ["Arg", "Procedure", "PROCEDURES", "build_parser", "open_table", "main"]
