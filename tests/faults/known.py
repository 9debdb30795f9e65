"""Known findings of the fault harness (issue 33): the cases whose trials fail a check today, with what goes
wrong, so their tests are strict xfails that flip once the product is fixed. ``SAMPLE_*`` hold the CI sample's
(first, middle and last call of each kind), ``SWEEP_*`` the full sweep's (every call; a superset).

``*_UNSAFE``: (operation, mode) -> the safety finding; ``*_UNCLEAR``: operation -> the error-reporting finding
(its trials in every mode together). Measured on the sweep of docs/testing.md ("Fault harness")."""

from __future__ import annotations

_DV_WRITE = (
    "a write to a deletion-vector table returns normally although its automatic compaction failed (logged "
    "only): the acknowledged rows stay at level 0, which batch reads skip, until a later compaction "
    "(Java compacts before it commits)"
)

SAMPLE_UNSAFE: dict[tuple[str, str], str] = {
    ("upsert_deletion_vectors", "fail"): _DV_WRITE + " (create #2, write #8, mkdir #9)",
    ("upsert_deletion_vectors", "transient"): _DV_WRITE + " (write #8, mkdir #9: data files and their "
    "directories are not retried)",
    ("upsert_deletion_vectors", "lost"): _DV_WRITE + " (write #8, mkdir #9)",
    ("upsert_deletion_vectors", "lost-final"): _DV_WRITE + " (write #8, mkdir #9)",
}

SWEEP_UNSAFE: dict[tuple[str, str], str] = {
    **SAMPLE_UNSAFE,
    ("upsert_deletion_vectors", "fail"): _DV_WRITE + " (40 of 111 calls)",
    ("upsert_deletion_vectors", "transient"): _DV_WRITE + " (about 18 of 111 calls: writes, listings, reads and "
    "directories of the compaction that FileIO does not retry)",
    ("upsert_deletion_vectors", "lost"): _DV_WRITE + " (about 18 of 111 calls)",
    ("upsert_deletion_vectors", "lost-final"): _DV_WRITE + " (39 of 111 calls)",
}

_RAW = (
    "storage errors reach the caller as a raw OSError, not a PaimonError: every failed listing or exists, data "
    "or metadata write, makedirs and delete (FileIO wraps only reads)"
)
_SILENT = "; some are raised after the operation took effect, and the message does not say so: "

_UNCLEAR: dict[str, str] = {
    "branch_create": _SILENT + "a failed listing of the new branch after it was made",
    "branch_merge": _SILENT + "the write of merge-bases.json, or a read, after the merge commit landed",
    "branch_publish": _SILENT + "the write of merge-bases.json, or a read, after the publish commit landed",
    "compact_postpone": _SILENT + "a read or listing of the compaction after the postpone move landed",
    "expire_snapshots": _SILENT + "data-file deletes and listings after snapshot files were deleted",
    "expire_tags": _SILENT + "data-file deletes and listings after the tag file was deleted",
    "fast_forward": _SILENT + "the LATEST/EARLIEST hints, deletes of replaced files, listings after the switch",
    "fast_forward_near": _SILENT + "the LATEST/EARLIEST hints, deletes of replaced files, listings after the switch",
    "remove_orphan_files": _SILENT + "a delete fails after other orphans were deleted",
    "replace_main": _SILENT + "the hints and listings after the switch",
    "schema_change": _SILENT + "a lost-answer create of the schema file is reported as 'already has a column'",
    "tag_create": _SILENT + "a lost-answer create of the tag file is reported as 'already exists'",
}

SAMPLE_UNCLEAR: dict[str, str] = {
    name: _RAW + _UNCLEAR.get(name, "")
    for name in (
        "append",
        "branch_create",
        "branch_merge",
        "branch_publish",
        "compact_append",
        "compact_chain",
        "compact_deletion_vectors",
        "compact_full",
        "compact_minor",
        "compact_postpone",
        "delete_append",
        "delete_append_deletion_vectors",
        "expire_changelog",
        "expire_partitions",
        "expire_snapshots",
        "expire_tags",
        "fast_forward",
        "fast_forward_near",
        "merge_primary_key",
        "remove_orphan_files",
        "replace_main",
        "schema_change",
        "spark_batch_write",
        "stream_micro_batch",
        "tag_create",
        "update_primary_key",
        "upsert_cross_partition",
        "upsert_deletion_vectors",
        "upsert_dynamic_bucket",
        "upsert_fixed_bucket",
    )
}
SWEEP_UNCLEAR: dict[str, str] = dict(SAMPLE_UNCLEAR)
