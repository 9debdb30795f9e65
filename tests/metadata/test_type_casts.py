"""Column type changes: Paimon's cast rules (Java's ``DataTypeCasts``) and the part of them reads here follow."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from pyspark_paimon.errors import SchemaError
from pyspark_paimon.metadata.types.casts import always_fits, convert_array, evolution_problem, supports_cast
from pyspark_paimon.metadata.types.ddl import parse_ddl


def t(ddl: str):  # noqa: ANN201 - a DataType
    return parse_ddl(f"c {ddl}")[0][1]


@pytest.mark.parametrize(
    "src,dst,implicit,explicit",
    [
        ("int", "bigint", True, True),
        ("bigint", "int", False, True),
        ("decimal(10,2)", "decimal(5,2)", True, True),  # the same root is implicit in Java, values aside
        ("int", "double", True, True),
        ("double", "float", False, True),
        ("float", "decimal(10,2)", True, True),
        ("string", "int", False, True),
        ("int", "string", False, True),
        ("timestamp_ntz", "date", True, True),
        ("date", "timestamp_ntz", False, True),
        ("timestamp_ntz", "timestamp", True, True),
        ("int", "date", False, False),
        ("bigint", "binary", False, False),
        ("string", "boolean", False, True),
        ("array<int>", "array<bigint>", True, True),
        ("array<int>", "string", False, True),
        ("variant", "string", False, True),
    ],
)
def test_paimons_cast_rules(src: str, dst: str, implicit: bool, explicit: bool) -> None:
    assert supports_cast(t(src), t(dst), False) is implicit
    assert supports_cast(t(src), t(dst), True) is explicit


def test_nullable_to_not_null_needs_explicit() -> None:
    assert not supports_cast(t("int"), t("bigint not null"), False)
    assert supports_cast(t("int"), t("bigint not null"), True)


@pytest.mark.parametrize(
    "src,dst,why",
    [
        ("double", "string", "the way Java does"),
        ("timestamp_ntz", "timestamp", "session time zone"),
        ("string", "varchar(3)", "longer VARCHAR"),
        ("struct<a: int>", "struct<a: bigint>", "member by member"),
        ("map<string, int>", "map<int, int>", "key type"),
        ("variant", "string", "the way Java does"),
    ],
)
def test_changes_reads_do_not_follow_are_named(src: str, dst: str, why: str) -> None:
    problem = evolution_problem(t(src), t(dst))
    assert problem is not None and why in problem


def _error(reason: str) -> SchemaError:
    return SchemaError(reason)


def test_conversions_follow_java() -> None:
    big = pa.array([2**62 + 1, None], pa.int64())
    assert convert_array(big, t("bigint"), t("double"), _error).to_pylist() == [float(2**62 + 1), None]  # nearest
    dec = pa.array([Decimal("0.10"), Decimal("123456789.123456789")], pa.decimal128(20, 9))
    assert convert_array(dec, t("decimal(20,9)"), t("double"), _error).to_pylist() == [0.1, 123456789.12345679]
    ts = pa.array([dt.datetime(1969, 12, 31, 23, 59, 59, 999999)], pa.timestamp("us"))
    assert convert_array(ts, t("timestamp_ntz"), t("date"), _error).to_pylist() == [dt.date(1969, 12, 31)]
    assert convert_array(ts, t("timestamp_ntz"), t("timestamp_ntz(3)"), _error).to_pylist() == [
        dt.datetime(1969, 12, 31, 23, 59, 59, 999000)
    ]  # cut, not rounded
    with pytest.raises(SchemaError, match="not in range"):
        convert_array(pa.array([300]), t("int"), t("tinyint"), _error)
    with pytest.raises(SchemaError, match="parse"):
        convert_array(pa.array(["1.5"]), t("string"), t("int"), _error)


@pytest.mark.parametrize(
    "src,dst,fits",
    [
        ("int", "bigint", True),
        ("bigint", "int", False),
        ("decimal(10,2)", "decimal(12,2)", True),
        ("decimal(10,2)", "decimal(12,4)", True),
        ("decimal(10,2)", "decimal(10,3)", False),  # one integer digit fewer
        ("int", "decimal(12,2)", True),
        ("int", "decimal(10,2)", False),
        ("varchar(5)", "string", True),
        ("string", "int", False),
        ("timestamp_ntz(3)", "timestamp_ntz(6)", True),
        ("timestamp_ntz(6)", "timestamp_ntz(3)", False),
        ("int", "int not null", False),
    ],
)
def test_always_fits_skips_only_safe_checks(src: str, dst: str, fits: bool) -> None:
    assert always_fits(t(src), t(dst)) is fits


def test_a_row_with_new_nullable_members_always_fits() -> None:
    from pyspark_paimon.metadata.types.model import DataField, RowType  # noqa: PLC0415

    old = RowType((DataField(1, "a", t("int")),))
    assert always_fits(old, RowType((DataField(1, "a", t("bigint")), DataField(2, "b", t("string")))))
    assert not always_fits(old, RowType((DataField(1, "a", t("int")), DataField(2, "b", t("string not null")))))
