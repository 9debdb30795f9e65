"""The typed view of table options: one ConfigOption constant per honoured key, parsed values and defaults,
errors that name the option, and the registry derived from the constants."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.schema import options as opts
from pyspark_paimon.metadata.schema.option_values import parse_duration_ms, parse_memory_size
from pyspark_paimon.metadata.schema.options import (
    BUCKET,
    BUCKET_KEY,
    COMMIT_MAX_RETRIES,
    COMMIT_MIN_RETRY_WAIT,
    FIELD_AGGREGATE_FUNCTION,
    FIELD_IGNORE_RETRACT,
    FIELD_LIST_AGG_DELIMITER,
    FIELD_SEQUENCE_GROUP,
    FILE_FORMAT,
    MERGE_ENGINE,
    PARTITION_LEGACY_NAME,
    SNAPSHOT_NUM_RETAINED_MAX,
    TAG_CREATION_PERIOD_DURATION,
    TAG_NUM_RETAINED_MAX,
    WRITE_BUFFER_SIZE,
    ConfigOption,
    CoreOptions,
    FieldOption,
)
from pyspark_paimon.metadata.schema.table_schema import TableSchema

PACKAGE = Path(__file__).resolve().parents[2] / "pyspark_paimon"


# ------------------------------------------------------------------------------------------------ registry
def _constants(kind: type) -> dict[str, object]:
    return {name: value for name, value in vars(opts).items() if isinstance(value, kind)}


def test_honoured_is_derived_from_the_constants() -> None:
    assert opts.HONOURED == {o.key: o.default for o in opts.OPTIONS if opts.KEYS[o.key].kind == "honoured"}
    assert opts.FIELD_OPTION_SUFFIXES == tuple(o.suffix for o in opts.FIELD_OPTIONS)
    # A constant of a key we do not implement exists only to tailor errors (deletion-vectors.enabled).
    assert {o.key for o in opts.OPTIONS} == set(opts.HONOURED)  # every typed constant is an honoured key


def test_every_honoured_key_has_exactly_one_constant() -> None:
    constants = _constants(ConfigOption)
    keys = [o.key for o in constants.values()]  # type: ignore[attr-defined]
    assert sorted(keys) == sorted(set(keys)), "a key declared by two constants"
    assert set(keys) == {o.key for o in opts.OPTIONS}
    assert set(opts.HONOURED) <= set(keys)
    assert len(constants) == len(opts.OPTIONS)
    suffixes = [o.suffix for o in _constants(FieldOption).values()]  # type: ignore[attr-defined]
    assert sorted(suffixes) == sorted(set(suffixes)) and set(suffixes) == set(opts.FIELD_OPTION_SUFFIXES)


def test_every_default_parses() -> None:
    for option in opts.OPTIONS:
        value = option.default_value
        assert (value is None) == (option.default is None), option.key
    for field_option in opts.FIELD_OPTIONS:
        assert (field_option.of("c").default_value is None) == (field_option.default is None), field_option.suffix


def test_every_honoured_and_field_option_is_known() -> None:
    for key in opts.HONOURED:
        assert opts.is_known(key)
    for field_option in opts.FIELD_OPTIONS:
        assert opts.is_known(field_option.of("some_col").key)


def test_registry_defaults_are_paimons() -> None:
    """The defaults a few call sites used to repeat."""
    assert opts.HONOURED["bucket"] == "-1"
    assert opts.HONOURED["merge-engine"] == "deduplicate"
    assert opts.HONOURED["bucket-function.type"] == "default"
    assert opts.HONOURED["commit.max-retries"] == "10"
    assert opts.HONOURED["commit.min-retry-wait"] == "10 ms"
    assert opts.HONOURED["commit.max-retry-wait"] == "10 s"
    assert opts.HONOURED["target-file-size"] is None
    assert opts.get({}, "write-buffer-size") == "256 mb"
    assert opts.get({"write-buffer-size": "1 mb"}, "write-buffer-size") == "1 mb"


# Keys that are also ordinary JSON members or data source options ("type", "path"...), read as such elsewhere.
_WORD_KEYS = {"type", "path", "comment", "owner"}
# planner/chain*.py and metadata/types/model.py are being reworked separately (chain.py still reads raw options);
# planner/read_options.py parses *read* options, which share some keys with table options.
_NOT_CHECKED = ("planner/chain", "metadata/types/model.py", "metadata/schema/options.py", "planner/read_options.py")


def test_no_module_reads_an_honoured_key_through_a_string_literal() -> None:
    """Table options are read through their constants, so each default and parse rule exists once."""
    keys = "|".join(re.escape(k) for k in opts.HONOURED if k not in _WORD_KEYS)
    raw_read = re.compile(rf"""(\.get\(|options\[|opts\[)\s*["'](?:{keys})["']""")
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(_NOT_CHECKED):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if raw_read.search(line):
                offenders.append(f"{rel}:{number}: {line.strip()}")
    assert offenders == []


def _core_options_readers() -> dict[str, set[str]]:
    """Constant name -> the CoreOptions methods and properties of options.py that read it."""
    tree = ast.parse((PACKAGE / "metadata" / "schema" / "options.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "CoreOptions")
    readers: dict[str, set[str]] = {}
    for fn in cls.body:
        if isinstance(fn, ast.FunctionDef):
            for node in ast.walk(fn):
                if isinstance(node, ast.Name):
                    readers.setdefault(node.id, set()).add(fn.name)
    return readers


def test_every_honoured_option_is_read_somewhere() -> None:
    """An honoured key that no code reads would be a semantic key silently ignored: each honoured constant must
    be used by a module other than the registry, directly or through a CoreOptions accessor that is."""
    sources = {
        p.relative_to(PACKAGE).as_posix(): p.read_text()
        for p in PACKAGE.rglob("*.py")
        if p.name not in ("options.py", "option_keys.py")
    }
    readers = _core_options_readers()
    names = {
        name: value
        for name, value in vars(opts).items()
        if isinstance(value, (ConfigOption, FieldOption)) and name.isupper()
    }
    unread = []
    for name, option in names.items():
        key = option.key if isinstance(option, ConfigOption) else option.of("c").key
        kind = opts.rule_of(key).kind  # type: ignore[union-attr]
        if kind != "honoured":
            continue
        used = any(re.search(rf"\b{name}\b", text) for text in sources.values())
        via = readers.get(name, set())
        used = used or any(re.search(rf"\.{method}\b", text) for method in via for text in sources.values())
        if not used:
            unread.append(f"{name} ({key})")
    assert unread == [], "honoured options that no code reads: classify them inert/refused, or read them"
    # The legacy ignore-delete spellings are honoured through CoreOptions.ignore_delete.
    assert "ignore_delete" in readers["IGNORE_DELETE_LEGACY_KEYS"]


# ------------------------------------------------------------------------------------------------ values
def test_values_are_parsed_to_their_types() -> None:
    o = CoreOptions(
        {
            "bucket": " 4 ",
            "bucket-key": "a, b,,c ",
            "commit.min-retry-wait": "2 s",
            "write-buffer-size": "64mb",
            "partition.legacy-name": "FALSE",
            "merge-engine": " Partial-Update",
            "file.format": "ORC",
            "tag.num-retained-max": "3",
        }
    )
    assert o.bucket == 4 and o.get(BUCKET) == 4
    assert o.bucket_keys == ["a", "b", "c"]
    assert o.get(COMMIT_MIN_RETRY_WAIT) == 2000
    assert o.get(WRITE_BUFFER_SIZE) == 64 * 1024**2
    assert o.get(PARTITION_LEGACY_NAME) is False
    assert o.merge_engine == "partial-update"
    assert o.file_format == "orc"
    assert o.get(TAG_NUM_RETAINED_MAX) == 3


def test_unset_and_blank_values_take_the_default() -> None:
    for mapping in ({}, {"commit.max-retries": "", "merge-engine": "  ", "bucket-key": " "}):
        o = CoreOptions(mapping)
        assert o.get(COMMIT_MAX_RETRIES) == 10
        assert o.merge_engine == "deduplicate"
        assert o.bucket == -1
        assert o.bucket_keys == []
        assert o.sequence_fields == []
        assert o.get(SNAPSHOT_NUM_RETAINED_MAX) == 2**31 - 1
        assert o.get(TAG_NUM_RETAINED_MAX) is None
        assert not o.is_set(BUCKET_KEY) and o.text(BUCKET_KEY) is None


def test_target_file_size_depends_on_the_table_kind() -> None:
    assert CoreOptions({}).target_file_size(primary_key_table=True) == 128 * 1024**2
    assert CoreOptions({}).target_file_size(primary_key_table=False) == 256 * 1024**2
    assert CoreOptions({"target-file-size": "1 mb"}).target_file_size(primary_key_table=True) == 1024**2


def test_sequence_fields_and_order() -> None:
    o = CoreOptions({"sequence.field": "ts, seq", "sequence.field.sort-order": "DESCENDING"})
    assert o.sequence_fields == ["ts", "seq"]
    assert o.sequence_descending is True
    assert CoreOptions({}).sequence_descending is False


def test_ignore_delete_accepts_the_legacy_spellings() -> None:
    assert CoreOptions({}).ignore_delete is False
    assert CoreOptions({"ignore-delete": "true"}).ignore_delete is True
    assert CoreOptions({"first-row.ignore-delete": "true"}).ignore_delete is True
    assert CoreOptions({"ignore-delete": "false", "partial-update.ignore-delete": "true"}).ignore_delete is True
    with pytest.raises(OptionError, match="'deduplicate.ignore-delete' must be 'true' or 'false', got 'yes'"):
        _ = CoreOptions({"deduplicate.ignore-delete": "yes"}).ignore_delete


def test_per_field_options() -> None:
    o = CoreOptions(
        {
            "fields.v.aggregate-function": " SUM ",
            "fields.v.ignore-retract": "true",
            "fields.w.list-agg-delimiter": "",
            "fields.v.sequence-group": "a,b",
        }
    )
    assert FIELD_AGGREGATE_FUNCTION.of("v").key == "fields.v.aggregate-function"
    assert o.field("v", FIELD_AGGREGATE_FUNCTION) == "sum"
    assert o.field("w", FIELD_AGGREGATE_FUNCTION) is None
    assert o.field("v", FIELD_IGNORE_RETRACT) is True and o.field("w", FIELD_IGNORE_RETRACT) is False
    assert o.field("v", FIELD_LIST_AGG_DELIMITER) == ","
    assert o.field("w", FIELD_LIST_AGG_DELIMITER) == ""  # an empty delimiter is a delimiter
    assert o.field_keys(FIELD_SEQUENCE_GROUP) == ["fields.v.sequence-group"]


# ------------------------------------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "mapping, option, expected",
    [
        ({"commit.max-retries": "ten"}, COMMIT_MAX_RETRIES, "an integer"),
        ({"commit.min-retry-wait": "soon"}, COMMIT_MIN_RETRY_WAIT, "a duration such as '10 ms'"),
        ({"write-buffer-size": "big"}, WRITE_BUFFER_SIZE, "a memory size such as '128 mb'"),
        ({"partition.legacy-name": "yes"}, PARTITION_LEGACY_NAME, "'true' or 'false'"),
        ({"merge-engine": "replace"}, MERGE_ENGINE, "one of deduplicate, partial-update, aggregation, first-row"),
        ({"bucket": "four"}, BUCKET, "an integer (N > 0 fixed buckets"),
        ({"tag.num-retained-max": "-1"}, TAG_NUM_RETAINED_MAX, "a non-negative integer"),
        ({"tag.creation-period-duration": "0 s"}, TAG_CREATION_PERIOD_DURATION, "a positive duration"),
    ],
)
def test_bad_values_name_the_option_the_value_and_the_form(
    mapping: dict[str, str], option: ConfigOption[object], expected: str
) -> None:
    with pytest.raises(OptionError) as info:
        CoreOptions(mapping).get(option)
    message = str(info.value)
    assert f"Option '{option.key}' must be " in message
    assert expected in message
    assert f"got '{mapping[option.key]}'" in message


def test_bad_per_field_value_names_the_column_option() -> None:
    with pytest.raises(OptionError, match="'fields.v.ignore-retract' must be 'true' or 'false', got 'maybe'"):
        CoreOptions({"fields.v.ignore-retract": "maybe"}).field("v", FIELD_IGNORE_RETRACT)


def test_value_parsers_for_non_option_values_keep_their_messages() -> None:
    assert parse_duration_ms("PT1H") == 3_600_000
    assert parse_duration_ms("1.5 s") == 1500
    assert parse_memory_size("4096") == 4096
    with pytest.raises(OptionError, match="Cannot parse older_than 'x'; use forms like '10 ms'"):
        parse_duration_ms("x", "older_than")
    with pytest.raises(OptionError, match="Cannot parse source.split.target-size '1 parsec'"):
        parse_memory_size("1 parsec", "source.split.target-size")
    assert opts.parse_duration_ms is parse_duration_ms  # still importable from the registry


# ------------------------------------------------------------------------------------------------ schema
def test_schema_core_options_apply_the_version_defaults() -> None:
    assert TableSchema(version=1).core_options.bucket == 1
    assert TableSchema(version=1).num_buckets == 1
    assert TableSchema(version=2).core_options.file_format == "orc"
    assert TableSchema().num_buckets == -1 and TableSchema().core_options.get(FILE_FORMAT) == "parquet"
    with pytest.raises(OptionError, match="'bucket' must be an integer"):
        _ = TableSchema(options={"bucket": "x"}).num_buckets


# ------------------------------------------------------------------------------------------------ merge options
def test_sequence_field_may_not_have_an_aggregate_function_when_created() -> None:
    # Java SchemaValidation.validateSequenceField; a table Java already holds is read as Java reads it.
    bad = {"merge-engine": "aggregation", "sequence.field": "s", "fields.s.aggregate-function": "max"}
    with pytest.raises(OptionError, match="'fields.s.aggregate-function'.*sequence field 's'"):
        opts.validate_table_options(bad, creating=True)
    opts.validate_table_options(bad, creating=False)
    opts.validate_table_options({**bad, "fields.s.aggregate-function": ""}, creating=True)


@pytest.mark.parametrize("creating", [True, False])
def test_count_aggregate_function_is_refused(creating: bool) -> None:
    # Java removed 'count' (FieldAggregatorFactory finds no such function); refused on create and on read.
    with pytest.raises(OptionError, match=r"'count' of column 'n' \(option 'fields.n.aggregate-function'.*'sum' over"):
        opts.validate_table_options(
            {"merge-engine": "aggregation", "fields.n.aggregate-function": "count"}, creating=creating
        )
    with pytest.raises(OptionError, match=r"'count' of the columns without.*'fields.default-aggregate-function'"):
        opts.validate_table_options(
            {"merge-engine": "partial-update", "fields.default-aggregate-function": "Count"}, creating=creating
        )
    # deduplicate and first-row tables never aggregate: Java ignores their function options
    opts.validate_table_options({"fields.n.aggregate-function": "count"}, creating=creating)


def test_aggregation_remove_record_on_delete_is_honoured() -> None:
    options = {"merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true"}
    opts.validate_table_options(options, creating=True)  # was refused as unknown
    assert CoreOptions(options).get(opts.AGGREGATION_REMOVE_RECORD_ON_DELETE) is True
    # Java FieldAggregatorFactory refuses it together with a column's ignore-retract (on read too)
    for creating in (True, False):
        with pytest.raises(OptionError, match="'aggregation.remove-record-on-delete' and 'fields.v.ignore-retract'"):
            opts.validate_table_options({**options, "fields.v.ignore-retract": "true"}, creating=creating)


def test_partial_update_remove_record_on_delete_conflicts_with_ignore_delete() -> None:
    # Java PartialUpdateMergeFunction.Factory: checkState(!(removeRecordOnDelete && ignoreDelete)), at create too.
    options = {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}
    opts.validate_table_options(options, creating=True)
    for creating, key in ((True, "ignore-delete"), (False, "ignore-delete"), (False, "partial-update.ignore-delete")):
        with pytest.raises(OptionError, match="'partial-update.remove-record-on-delete' and 'ignore-delete'"):
            opts.validate_table_options({**options, key: "true"}, creating=creating)
