"""mkdocs hook: the option reference (``docs/reference/options.md``) is generated from the option registry.

Table options come from :mod:`pyspark_paimon.metadata.schema.options` (one ``ConfigOption`` constant per honoured
key: key, value type, default, description) and :mod:`pyspark_paimon.metadata.schema.option_keys` (every inert or
refused key Java Paimon defines, with its reason). Read options come from
:mod:`pyspark_paimon.planner.read_options` (the key lists the reader accepts) plus the one-line meanings below,
which ``tests/test_docs.py`` keeps in step with those lists. The page is rendered at build time, so it can never
drift from the code; the committed ``options.md`` is only the placeholder the hook replaces.
"""

from __future__ import annotations

from typing import Any

from pyspark_paimon.metadata.schema import option_keys, options
from pyspark_paimon.planner import read_options

PAGE = "reference/options.md"

#: Meaning of every read key of ``read_options`` (canonical keys; aliases are listed from the code).
READ_MEANINGS: dict[str, str] = {
    "path": "Table directory (or `load(path)`); may end in `$branch_<name>` and/or a system table such as "
    "`$snapshots`.",
    "paths": "Spark's spelling of the load path(s); one table directory.",
    "warehouse": 'With `load("db.table")`: the warehouse root.',
    "branch": "Branch to read (default `main`).",
    "source.split.target-size": "Bytes per Spark task when packing splits (default `128 mb`).",
    "source.split.open-file-cost": "Minimum weight of a file when packing (default `64 kb`; Java's is `4 mb`, "
    "see [Performance](../performance.md)).",
    "read.batch-size": "Rows per Arrow batch (default 65536).",
    "scan.fallback-branch": "A partition missing from the branch read is read from this branch.",
    "incremental-between-scan-mode": "`delta` (the changed data files), `diff` (the rows that differ between the "
    "two versions) or `auto` (Paimon's default: delta, refused for tables with a changelog producer).",
    "incremental-between-tag-to-snapshot": "Between two tags: `false` (Java's default) diffs the tags, `true` "
    "reads the snapshots in between (delta).",
    "scan.partitions": "Paimon's partition list `k=v,k2=v2;k=v3` (missing keys = the default partition); "
    "`max_pt()` is refused.",
    "filter": "A SQL condition selecting rows at load time: prunes partitions, buckets, files and row groups, "
    "applied exactly (see [Reading](../reading.md)).",
    "incremental-between": "Rows changed between two snapshots or tags (`start,end`).",
    "file-index.read.enabled": "`false`: planning does not skip data files by their bloom-filter or bitmap "
    "indexes (default: the table option, else `true`; see [File indexes](../file-indexes.md)).",
    "read.row-tracking-columns": "`true`: the read returns `_ROW_ID` and `_SEQUENCE_NUMBER` after the table's "
    "columns (row-tracking tables only; the same as the `$row_tracking` system table; see "
    "[Row tracking](../row-tracking.md)).",
    "pyspark-paimon.only-splits": "Internal to `Scan.to_spark` (the splits its `paimon` half reads); do not set it.",
    "incremental-between-timestamp": "Rows changed between two instants (`start,end`).",
    "scan.snapshot-id": "Read that snapshot (`versionAsOf` with anything but digits works as `scan.version`).",
    "scan.tag-name": "Read a tag.",
    "scan.timestamp-millis": "The latest snapshot committed at or before this epoch-ms instant.",
    "scan.timestamp": "The same, as `yyyy-MM-dd HH:mm:ss` in the local time zone.",
    "scan.watermark": "The first snapshot whose watermark is at least the value.",
    "scan.version": "A tag name, `watermark-<n>`, a snapshot id (tags win, as in Paimon), or `<branch>.<tag>` / "
    "`<branch>.<snapshot id>` (see [Branches](../branches.md)).",
    "scan.mode": "Where a stream starts: `latest-full` (default), `latest`, `from-snapshot`, "
    "`from-snapshot-full`, `from-timestamp` (see [Streaming](../streaming.md)).",
    "consumer-id": "Records the stream's progress in `consumer/consumer-<id>`; expiration keeps its snapshots.",
    "consumer.ignore-progress": "`true`: start as if the consumer had no progress.",
    "consumer.mode": "`exactly-once` (default): a consumer's micro-batches hold whole commits, so its recorded "
    "progress is exact; `at-least-once`: the per-trigger limits may end a batch inside a commit, which a restart "
    "from the consumer reads again.",
    "read.changelog": "`true`: the stream carries every change with a leading `rowkind` column.",
    "streaming-read-overwrite": "`true`: OVERWRITE commits of primary-key tables contribute their change by key.",
    "streaming-read-append-overwrite": "`true`: OVERWRITE commits of append tables contribute the rows they add.",
    "chain-table.streaming.merge-snapshot": "Chain tables: `true` starts the stream with each group's latest snapshot "
    "partition and the later deltas merged by key (default: the table option, else `false`).",
    "read.stream.maxfilespertrigger": "Cap of data files per micro-batch (Spark 4.2+).",
    "read.stream.maxbytespertrigger": "Cap of bytes per micro-batch (Spark 4.2+).",
    "read.stream.maxrowspertrigger": "Cap of rows per micro-batch (Spark 4.2+).",
    "read.stream.minrowspertrigger": "Wait for this many rows per micro-batch (with `maxTriggerDelayMs`).",
    "read.stream.maxtriggerdelayms": "The longest wait for `minRowsPerTrigger`.",
}


def _cell(text: object) -> str:
    """Markdown table cell: pipes escaped, newlines folded."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _code(text: str | None) -> str:
    return "" if text is None or text == "" else f"`{_cell(text)}`"


def _values(values: tuple[str, ...] | None) -> str:
    if values is None:
        return "any"
    return ", ".join(f"`{v}`" for v in values) if values else "none"


def read_key_aliases() -> dict[str, tuple[str, ...]]:
    """Every canonical read key (batch and stream) -> its aliases, in the order of ``read_options``."""
    keys: dict[str, tuple[str, ...]] = {}
    for key in (*read_options.OTHER_READ_KEYS, *read_options.INCREMENTAL_KEYS):
        keys[key] = ()
    for key, aliases in read_options.TIME_TRAVEL_KEYS.items():
        keys[key] = aliases
    for key in read_options.STREAM_KEYS:
        keys.setdefault(key, ())
    return keys


def render() -> str:
    """The whole option reference page as Markdown."""
    out: list[str] = [
        "# Option reference",
        "",
        "<!-- Generated by docs/hooks/options_page.py from the option registry at build time; do not edit. -->",
        "",
        "Option keys are case-insensitive in Spark. **An option the connector does not know is an error**, with a "
        "did-you-mean hint; it is never silently ignored.",
        "",
        "## Read options",
        "",
        "Given as `spark.read.option(...)`, `spark.readStream.option(...)` or `t.scan(read_options={...})`. "
        "Time-travel options are mutually exclusive: two of them are an error. A batch read refuses the "
        "stream-only ones, and a stream refuses batch-only ones. `fs.<key>` passes an fsspec storage option "
        "(`true`/`false` become booleans, a JSON object a dict; see [Deploying](../deploying.md)).",
        "",
        "| option | aliases | batch | stream | meaning |",
        "|---|---|---|---|---|",
    ]
    batch = set(read_options.READ_KEYS)
    stream = set(read_options.STREAM_KEYS)
    for key, aliases in read_key_aliases().items():
        out.append(
            f"| `{key}` | {', '.join(f'`{a}`' for a in aliases)} | {'yes' if key in batch else ''} | "
            f"{'yes' if key in stream else ''} | {_cell(READ_MEANINGS[key])} |"
        )
    out += [
        "",
        "Streaming writes need `checkpointLocation`; they take the write options below except the overwrite ones.",
        "",
        "## Write options",
        "",
        "| option | meaning |",
        "|---|---|",
        "| `path` / `warehouse` / `branch` / `fs.<key>` | as for reads |",
        "| `partitionOverwriteMode` | `dynamic`: overwrite only the partitions present in the data (with "
        '`mode("overwrite")`); `static`: the whole table. Without it, the session\'s '
        "`spark.sql.sources.partitionOverwriteMode` decides |",
        "| `overwrite-partition` | static partition overwrite, e.g. `dt=20250811` or `dt=20250811,hr=10` |",
        "| `audit-branch` | write-audit-publish: the write (batch or streaming) goes to this branch, created from "
        "the written branch when absent; `t.branches.publish(name)` lands it (see Branches) |",
        "| `primary-key`, `partition`, `comment` | used when the write creates the table |",
        "| any table option | used when the write creates the table |",
        "",
        "## Table options",
        "",
        "Every option key Java Paimon defines is classified: **honoured** (read and acted on), **refused** (a value "
        "we cannot honour is an error naming the key, the value and the fix) or **inert** (kept untouched: it cannot "
        "change what a batch read returns or what a write must produce). Creating a table with a key Paimon does "
        "not define is an error; a table that carries one (other engines add their own) is still read.",
        "",
        f"### Honoured ({sum(1 for r in options.KEYS.values() if r.kind == 'honoured')} keys)",
        "",
        "| option | type | default | meaning |",
        "|---|---|---|---|",
    ]
    constants = {o.key: o for o in options.OPTIONS}
    for key, rule in options.KEYS.items():
        if rule.kind != "honoured":
            continue
        option = constants.get(key)
        if option is None:  # a legacy spelling
            out.append(f"| `{key}` | | | {_cell(rule.reason)} |")
            continue
        accepted = "" if rule.read_ok is None else f" Accepted: {_values(rule.read_ok)}."
        out.append(
            f"| `{key}` | {_cell(option.value_type.expected)} | {_code(option.default)} | "
            f"{_cell(option.description)}{_cell(accepted)} |"
        )
    out += [
        "",
        "### Per-column options (`fields.<column>.<suffix>`)",
        "",
        "| suffix | kind | type | default | meaning |",
        "|---|---|---|---|---|",
    ]
    field_constants = {o.suffix: o for o in options.FIELD_OPTIONS}
    for suffix, rule in options.FIELD_KEY_RULES.items():
        field = field_constants.get(suffix)
        expected = _cell(field.value_type.expected) if field else ""
        default = _code(field.default) if field else ""
        meaning = field.description if field and rule.kind == "honoured" else rule.reason
        out.append(f"| `{suffix}` | {rule.kind} | {expected} | {default} | {_cell(meaning)} |")
    out += [
        "",
        "### Refused",
        "",
        "*Read* lists the values a read (and a write) accepts, *write* the values a write and table creation "
        "accept (blank = as for reads). Any other non-blank value is an error.",
        "",
        "| option | read accepts | write accepts | why | fix |",
        "|---|---|---|---|---|",
    ]
    for key, rule in sorted(options.KEYS.items()):
        if rule.kind == "refused":
            write = "" if rule.write_ok is None else _values(rule.write_ok)
            out.append(f"| `{key}` | {_values(rule.read_ok)} | {write} | {_cell(rule.reason)} | {_cell(rule.fix)} |")
    out += ["", "### Inert", "", "| option | why it cannot change a result |", "|---|---|"]
    for key, rule in sorted(options.KEYS.items()):
        if rule.kind == "inert":
            out.append(f"| `{key}` | {_cell(rule.reason)} |")
    out += ["", "### Key families", "", "| prefix | kind | why |", "|---|---|---|"]
    for prefix, rule in option_keys.PREFIX_RULES:
        out.append(f"| `{prefix}*` | {rule.kind} | {_cell(rule.reason)} |")
    out += [
        "",
        "Keys Java marks immutable cannot change once a table exists: "
        + ", ".join(f"`{k}`" for k in sorted(option_keys.JAVA_IMMUTABLE))
        + ".",
        "",
    ]
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """mkdocs event: replace the placeholder of the option reference with the generated page."""
    if page.file.src_uri == PAGE:
        return render()
    return markdown
