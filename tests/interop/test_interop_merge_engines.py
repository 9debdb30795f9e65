"""Merge-engine semantics checked against the oracles where they implement them.

pypaimon 2.1.0 aggregates and partial-updates insert-only data (it refuses -U/-D records and the
``*.remove-record-on-delete`` options), so only the insert-only rules are compared here: a ``sequence.field``
column is never aggregated, and an integer ``sum`` that overflows fails instead of wrapping. Java is the
reference everywhere (the merge tests in ``tests/datasource/test_merge.py`` follow its sources); where an
oracle differs from Java the test says so rather than following it.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.datasource.merge.merge import MergeError
from tests.interop.helpers import OracleBatch, assert_oracles_agree, assert_same_table, ours_arrow, rows_of, table_uri

try:
    from tests import oracle
except ImportError:  # pragma: no cover
    import oracle  # type: ignore[no-redef]

pytestmark = pytest.mark.interop

SEQ_AGG_OPTIONS = {
    "bucket": 1,
    "merge-engine": "aggregation",
    "sequence.field": "seq",
    "fields.default-aggregate-function": "sum",
}
EXPECTED = [{"k": 1, "seq": 10, "v": 3}, {"k": 2, "seq": 7, "v": 2}]
THEIRS, OURS, OVERFLOW = "db.seq_theirs", "db.seq_ours", "db.overflow"


@pytest.fixture(scope="module")
def tables(module_warehouse: str) -> OracleBatch:
    """Every table of the module: ours written in-process, then their writes and both oracles' reads in ONE
    oracle process. (The overflowing read is left out: a failing command ends a batch.)"""
    wh = module_warehouse
    # Duplicate keys of one write are folded by our writer, the commits merged by their readers.
    t = Catalog(wh).create_table(
        OURS, "k int not null, seq bigint, v bigint", primary_keys=["k"], options=SEQ_AGG_OPTIONS
    )
    t.write_arrow(_rows(t, [{"k": 1, "seq": 10, "v": 1}, {"k": 1, "seq": 4, "v": 1}, {"k": 2, "seq": 3, "v": 1}]))
    t.write_arrow(_rows(t, [{"k": 1, "seq": 5, "v": 1}, {"k": 2, "seq": 7, "v": 1}]))
    batch = OracleBatch(wh)
    batch.write(
        THEIRS,
        [{"rows": [[1, 10, 1], [2, 3, 1]]}, {"rows": [[1, 5, 2], [2, 7, 1]]}],
        create=oracle.table_spec(
            [["k", "INT", False], ["seq", "BIGINT"], ["v", "BIGINT"]], primary_keys=["k"], options=SEQ_AGG_OPTIONS
        ),
    )
    batch.write(
        OVERFLOW,
        [{"rows": [[1, 2**63 - 1], [2, 1]]}, {"rows": [[1, 1], [2, 1]]}],
        create=oracle.table_spec(
            [["k", "INT", False], ["v", "BIGINT"]],
            primary_keys=["k"],
            options={"bucket": 1, "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
        ),
    )
    batch.read(THEIRS, THEIRS)
    batch.read(OURS, OURS)
    return batch.run()


def test_sequence_field_is_not_aggregated_they_write(module_warehouse: str, tables: OracleBatch) -> None:
    # Java AggregateMergeFunction.getAggFuncName: the sequence field takes last_value (the winner's value).
    theirs = assert_oracles_agree(tables.tables[THEIRS], THEIRS)
    assert rows_of(theirs) == EXPECTED
    assert_same_table(ours_arrow(table_uri(module_warehouse, THEIRS)), theirs, THEIRS)


def test_sequence_field_is_not_aggregated_we_write(module_warehouse: str, tables: OracleBatch) -> None:
    theirs = assert_oracles_agree(tables.tables[OURS], OURS)
    assert rows_of(theirs) == EXPECTED
    assert rows_of(ours_arrow(table_uri(module_warehouse, OURS))) == EXPECTED


def test_bigint_sum_overflow_fails_in_every_reader(module_warehouse: str, tables: OracleBatch) -> None:
    # Java FieldSumAgg: Math.addExact throws ArithmeticException; pypaimon raises too (its FieldSumAgg).
    # pypaimon-rust 0.4.0 differs from Java: it wraps silently (k=1 reads -2^63), so it is not asked here.
    with pytest.raises(oracle.OracleError, match="(?i)overflow"):
        oracle.pypaimon_read(module_warehouse, OVERFLOW)
    with pytest.raises(MergeError, match=r"'sum' of column 'v' \(int64\) failed for key \(k=1\)"):
        ours_arrow(table_uri(module_warehouse, OVERFLOW))


def _rows(table: Any, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=table.schema.arrow_schema())
