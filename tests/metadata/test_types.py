"""The Paimon type model (Java's ``org.apache.paimon.types``): normalised parameters, validation, and field-id
assignment."""

from __future__ import annotations

import pytest

from pyspark_paimon.errors import SchemaError, UnsupportedTypeError
from pyspark_paimon.metadata.types.model import (
    STRING_LENGTH,
    ArrayType,
    AtomicType,
    DataField,
    MapType,
    RowType,
    assign_field_ids,
    bytes_type,
    max_field_id,
    string_type,
    type_to_sql,
)


def test_type_model_normalises_defaults() -> None:
    assert AtomicType("timestamp") == AtomicType("TIMESTAMP", precision=6)
    assert AtomicType("DECIMAL") == AtomicType("DECIMAL", precision=10, scale=0)
    assert AtomicType("DECIMAL", precision=5) == AtomicType("DECIMAL", precision=5, scale=0)
    assert string_type() == AtomicType("VARCHAR", length=STRING_LENGTH)
    assert bytes_type(False) == AtomicType("VARBINARY", False, length=STRING_LENGTH)
    assert string_type().copy(nullable=False) == string_type(False)
    assert string_type().with_nullable(False).with_nullable(True) == string_type()
    assert AtomicType("INT").root == "INT" and ArrayType(AtomicType("INT")).root == "ARRAY"
    assert str(MapType(string_type(False), AtomicType("INT"))) == "MAP<STRING NOT NULL, INT>"
    row = RowType((DataField(0, "a b", AtomicType("INT", False)),), False)
    assert type_to_sql(row) == "ROW<`a b` INT NOT NULL> NOT NULL"
    # hashable and usable as dict keys
    assert len({AtomicType("INT"), AtomicType("INT"), AtomicType("INT", False)}) == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(name="DECIMAL", precision=39, scale=0),
        dict(name="DECIMAL", precision=5, scale=6),
        dict(name="TIMESTAMP", precision=10),
        dict(name="VARCHAR", length=0),
        dict(name="INT", length=3),
        dict(name="CHAR", precision=3),
    ],
)
def test_type_model_rejects_bad_parameters(kwargs: dict) -> None:
    with pytest.raises(SchemaError):
        AtomicType(**kwargs)


def test_unknown_atomic_name_in_model() -> None:
    with pytest.raises(UnsupportedTypeError, match="FOO"):
        AtomicType("FOO")


def test_field_ids_spec_example() -> None:
    # As Java's `ReassignFieldId` numbers them: r has id 12, its children a and b get 13 and 14, and the next column p
    # gets 15.
    cols: list[tuple] = [(f"c{i}", AtomicType("INT")) for i in range(12)]
    cols.append(("r", RowType((DataField(-1, "a", AtomicType("INT")), DataField(-1, "b", string_type())))))
    cols.append(("p", AtomicType("BIGINT")))
    fields, highest = assign_field_ids(cols)
    assert [f.id for f in fields] == list(range(13)) + [15]
    r = fields[12]
    assert r.id == 12 and [c.id for c in r.type.fields] == [13, 14]
    assert highest == 15 == max_field_id(fields)


def test_field_ids_nested_collections_do_not_consume_ids() -> None:
    row = RowType((DataField(-1, "q", AtomicType("BIGINT")),))
    fields, highest = assign_field_ids(
        [
            ("a", ArrayType(row)),
            ("m", MapType(string_type(False), row)),
            ("plain", ArrayType(AtomicType("INT"))),
            ("n", RowType((DataField(-1, "x", RowType((DataField(-1, "y", AtomicType("INT")),))),))),
            ("z", AtomicType("INT"), "zz"),
        ],
        start=5,
    )
    assert [f.id for f in fields] == [5, 7, 9, 10, 13]
    assert fields[0].type.element.fields[0].id == 6
    assert fields[1].type.value.fields[0].id == 8
    # parent before its children, depth first
    assert fields[3].type.fields[0].id == 11 and fields[3].type.fields[0].type.fields[0].id == 12
    assert fields[4].description == "zz"
    assert highest == 13
    assert assign_field_ids([], start=4) == ([], 3)


def test_assign_field_ids_accepts_datafields() -> None:
    f = DataField(99, "a", AtomicType("INT"), "desc", "1")
    out, highest = assign_field_ids([f, ("b", AtomicType("INT"))])
    assert out[0] == DataField(0, "a", AtomicType("INT"), "desc", "1")
    assert highest == 1
    with pytest.raises(SchemaError):
        assign_field_ids([("a",)])
    with pytest.raises(SchemaError, match="'a'"):
        assign_field_ids([("a", "INT")])
