"""The Variant binary encoding and shredding (``metadata/variant``): round trips, the bytes other engines write,
Spark's ``parse_json`` number rules, Java's shredding rules, and malformed input refused."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyspark_paimon.errors import OptionError, VariantError
from pyspark_paimon.metadata.types.model import AtomicType, DataField
from pyspark_paimon.metadata.variant.binary import (
    EMPTY_METADATA,
    Variant,
    VariantKind,
    from_python,
    parse_json,
    to_json,
    to_python,
)
from pyspark_paimon.metadata.variant.shredding import (
    rebuild_column,
    shred_column,
    shredded_arrow_type,
    shredding_types,
)
from pyspark_paimon.variant import variant_array, variant_values

# pypaimon 2.1's GenericVariant.from_python({"b": [1, {"c": "é"}], "a": 1.5}): the same bytes Java's builder makes.
PYPAIMON_VALUE = "020202000f0018030200020a0c01020101000309c3a91c000000000000f83f"
PYPAIMON_METADATA = "010300010203626361"

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=80)
    | st.decimals(allow_nan=False, allow_infinity=False, places=3, min_value=-(10**20), max_value=10**20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=20,
)


def test_reads_and_builds_the_bytes_pypaimon_writes() -> None:
    value, metadata = bytes.fromhex(PYPAIMON_VALUE), bytes.fromhex(PYPAIMON_METADATA)
    assert to_python(value, metadata) == {"a": 1.5, "b": [1, {"c": "é"}]}
    assert from_python({"b": [1, {"c": "é"}], "a": 1.5}) == (value, metadata)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_python_values_round_trip(obj: Any) -> None:
    value, metadata = from_python(obj)
    assert to_python(value, metadata) == obj


def test_parse_json_encodes_numbers_as_spark_does() -> None:
    def kinds(text: str) -> list[str]:
        v = Variant(*parse_json(text))
        return [child.kind() for child in v.elements()]

    assert kinds("[1, 1.50, 1e3, 123456789012345678901234567890, 1.0e-1]") == [
        VariantKind.INTEGER,
        VariantKind.DECIMAL,
        VariantKind.DOUBLE,
        VariantKind.DECIMAL,  # beyond 64 bits, up to 38 digits
        VariantKind.DOUBLE,
    ]
    value, metadata = parse_json('{"b": 1.50, "a": [true, null]}')
    assert to_python(value, metadata) == {"a": [True, None], "b": Decimal("1.50")}
    assert to_json(value, metadata) == '{"a":[true,null],"b":1.5}'  # Spark prints decimals without trailing zeros
    with pytest.raises(VariantError, match="twice"):
        parse_json('{"a": 1, "a": 2}')
    with pytest.raises(VariantError, match="Not valid JSON"):
        parse_json("{")


def test_to_json_spells_scalars_as_spark() -> None:
    assert to_json(*from_python([1e10, 0.001, 1e-5, 12.0, -0.0, 'q"', dt.date(2024, 2, 29)])) == (
        '[1.0E10,0.001,1.0E-5,12.0,-0.0,"q\\"","2024-02-29"]'
    )
    assert to_json(*from_python("x" * 70)) == json.dumps("x" * 70)


def test_objects_find_fields_and_arrays_elements() -> None:
    v = Variant(*from_python({f"k{i:03d}": i for i in range(300)}))  # a large object: 4-byte count, 2-byte ids
    assert v.field("k257") is not None and v.field("k257").scalar() == 257  # type: ignore[union-attr]
    assert v.field("nope") is None
    arr = Variant(*from_python(list(range(300))))
    assert arr.element(299).scalar() == 299  # type: ignore[union-attr]
    assert arr.element(300) is None and arr.field("a") is None


@pytest.mark.parametrize(
    "value,metadata,why",
    [
        (b"\x0c\x01", b"\x02\x00\x00", "metadata version"),
        (b"\x02\x05\x00", EMPTY_METADATA, "outside"),
        (b"\xfc", EMPTY_METADATA, "unknown primitive"),
        (b"\x40\x05\x00\x00\x00ab", EMPTY_METADATA, "run past"),
    ],
)
def test_malformed_values_are_refused(value: bytes, metadata: bytes, why: str) -> None:
    with pytest.raises(VariantError, match=why):
        to_python(value, metadata)


# ---------------------------------------------------------------------------------------------- shredding
REQUESTED = json.dumps(
    {
        "type": "ROW",
        "fields": [
            {
                "name": "v",
                "type": {
                    "type": "ROW",
                    "fields": [
                        {"name": "age", "type": "INT"},
                        {"name": "amount", "type": "DECIMAL(10, 2)"},
                        {"name": "when", "type": "TIMESTAMP(6)"},
                        {"name": "tags", "type": {"type": "ARRAY", "element": "STRING"}},
                        {"name": "any", "type": "VARIANT"},
                    ],
                },
            }
        ],
    }
)
FIELDS = [DataField(0, "id", AtomicType("BIGINT")), DataField(1, "v", AtomicType("VARIANT"))]


def _shape() -> Any:
    return shredding_types({"variant.shreddingSchema": REQUESTED}, FIELDS)["v"]


def test_shredding_keeps_what_does_not_fit_in_value() -> None:
    values = [
        {"age": 30, "amount": Decimal("1.5"), "tags": ["a", 2], "other": {"x": 1}},
        {"age": 2**40, "amount": 7, "when": dt.datetime(2024, 1, 1, 12)},
        {"age": "thirty", "any": [1, {"z": None}], "amount": Decimal("0.001")},
        {"age": None},
        [{"age": 1}],
        None,
    ]
    shredded = shred_column(variant_array(values), _shape())
    assert shredded.type == shredded_arrow_type(_shape())
    rows = shredded.to_pylist()
    typed0 = rows[0]["typed_value"]
    assert typed0["age"] == {"value": None, "typed_value": 30}
    assert typed0["amount"] == {"value": None, "typed_value": Decimal("1.50")}  # rescaled exactly (Java does)
    assert typed0["tags"]["typed_value"][1]["typed_value"] is None  # 2 is not a STRING: kept as bytes
    assert rows[0]["value"] is not None  # 'other' is not shredded
    assert rows[1]["typed_value"]["age"]["typed_value"] is None  # does not fit INT
    assert rows[1]["typed_value"]["amount"]["typed_value"] == Decimal("7.00")
    assert rows[2]["typed_value"]["amount"]["typed_value"] is None  # 0.001 needs 3 decimals
    assert rows[3]["typed_value"]["age"]["value"] == b"\x00"  # a VARIANT null is present, not missing
    assert rows[4]["typed_value"] is None and rows[5] is None
    assert variant_values(rebuild_column(shredded)) == values


@settings(max_examples=100, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["age", "amount", "tags", "any", "x"]), json_values, max_size=4)))
def test_shredding_round_trips(values: list[Any]) -> None:
    assert variant_values(rebuild_column(shred_column(variant_array(values), _shape()))) == values


def test_rebuild_refuses_a_field_both_shredded_and_in_value() -> None:
    good = shred_column(variant_array([{"age": 1}]), _shape())
    value, _ = from_python({"age": 2})
    row = good.to_pylist()[0]
    row["value"] = value
    bad = pa.array([row], type=good.type)
    with pytest.raises(VariantError, match="both shredded"):
        rebuild_column(bad)


@pytest.mark.parametrize(
    "option,why",
    [
        ('{"type":"ROW","fields":[{"name":"id","type":"INT"}]}', "not a VARIANT column"),
        ('{"type":"ROW","fields":[{"name":"v","type":"TIME(0)"}]}', "does not shred"),
        ('{"type":"ARRAY","element":"INT"}', "not a ROW"),
        ("{", "not a Paimon type"),
    ],
)
def test_bad_shredding_options_name_the_option(option: str, why: str) -> None:
    with pytest.raises(OptionError, match=f"variant.shreddingSchema.*{why}"):
        shredding_types({"variant.shreddingSchema": option}, FIELDS)


def test_legacy_key_is_read() -> None:
    assert "v" in shredding_types({"parquet.variant.shreddingSchema": REQUESTED}, FIELDS)
    assert shredding_types({}, FIELDS) == {}


def test_spark_null_members_are_accepted_and_emptied() -> None:
    """Spark hands a NULL variant with NULL members; a written column must not carry them."""
    spark_form = pa.StructArray.from_arrays(
        [pa.array([b"\x0c\x01", None]), pa.array([EMPTY_METADATA, None])],
        names=["value", "metadata"],
        mask=pa.array([False, True]),
    )
    plain = rebuild_column(spark_form, "column 'v'")
    assert plain.to_pylist() == [{"value": b"\x0c\x01", "metadata": EMPTY_METADATA}, None]
    assert plain.field(0).null_count == 0
    broken = pa.StructArray.from_arrays(
        [pa.array([None], pa.binary()), pa.array([EMPTY_METADATA])], ["value", "metadata"]
    )
    with pytest.raises(VariantError, match="column 'v'"):
        rebuild_column(broken, "column 'v'")


# ---------------------------------------------------------------------------------------------- variant_get
def _get(values: list[Any], path: str, type_text: str, fail: bool = True) -> list[Any]:
    from pyspark_paimon.metadata.variant.path import variant_get  # noqa: PLC0415

    field = DataField(1, "v", AtomicType("VARIANT"))
    return variant_get(field, path, type_text, fail).evaluate(variant_array(values)).to_pylist()


def test_variant_get_walks_paths_and_converts_as_spark() -> None:
    values = [{"a": {"b": [10, Decimal("2.50"), "s", True, None]}, "q'k": 1}, {"a": 7}, None, "plain", 300]
    assert _get(values, "$.a.b[0]", "bigint") == [10, None, None, None, None]
    assert _get(values, "$['a'][\"b\"][1]", "double") == [2.5, None, None, None, None]
    assert _get(values, "$.a.b[1]", "decimal(4,2)") == [Decimal("2.50"), None, None, None, None]
    assert _get(values, "$.a.b[2]", "string") == ["s", None, None, None, None]
    assert _get(values, "$.a.b[3]", "boolean") == [True, None, None, None, None]
    assert _get(values, "$.a.b[4]", "int") == [None] * 5  # a VARIANT null
    assert _get(values, "$.a", "string") == ['{"b":[10,2.5,"s",true,null]}', "7", None, None, None]
    assert _get(values, "$['q\\'k']", "int") == [1, None, None, None, None]
    assert _get(values, "$", "string") == [
        '{"a":{"b":[10,2.5,"s",true,null]},"q\'k":1}',
        '{"a":7}',
        None,
        "plain",
        "300",
    ]
    assert _get([*values[:3], 300], "$", "tinyint", fail=False) == [None, None, None, None]  # objects; 300: too big
    with pytest.raises(VariantError, match="out of the range of TINYINT"):
        _get([300], "$", "tinyint")
    with pytest.raises(VariantError, match="is not a INT"):
        _get([{"a": 1}], "$", "int")
    with pytest.raises(VariantError, match="rules pyspark-paimon does not reproduce"):
        _get(["12"], "$", "int", fail=False)  # Spark parses it: refused rather than guessed
    with pytest.raises(VariantError, match="Spark truncates"):
        _get([Decimal("2.5")], "$", "int")
    with pytest.raises(VariantError, match="start with"):
        _get([1], "a", "int")
    with pytest.raises(VariantError, match="not one the filter compares"):
        _get([1], "$", "array<int>")
