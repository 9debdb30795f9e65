"""CREATE TABLE ... USING paimon: what Spark adds to the options is dropped, the user's keys stay, and the
location survives in the catalog schema's field metadata (no SparkSession needed)."""

from __future__ import annotations

import pytest
from pyspark.sql.types import LongType, StructField, StructType

from pyspark_paimon.datasource.spark.source import names_a_table, remember_table, remembered_table, without_create_keys
from pyspark_paimon.errors import OptionError


def test_create_keys_are_dropped_and_user_keys_kept() -> None:
    spark_opts = {
        "owner": "root",
        "provider": "paimon",
        "location": "file:/wh/db.db/t",
        "path": "file:/wh/db.db/t",
        "branch": "dev",
        "option.branch": "dev",
        "Filter": "id > 1",
        "option.filter": "id > 1",
        "bukcet": "2",
    }
    opts, creating = without_create_keys(spark_opts)
    assert creating
    assert opts == {"path": "file:/wh/db.db/t", "branch": "dev", "filter": "id > 1", "bukcet": "2"}
    # LOCATION without a path option becomes the path; a plain read is not a CREATE
    assert without_create_keys({"provider": "PAIMON", "location": "/x"}) == ({"path": "/x"}, True)
    assert without_create_keys({"path": "/x", "owner": "me"}) == ({"path": "/x", "owner": "me"}, False)


def test_the_location_is_remembered_in_field_metadata() -> None:
    schema = StructType([StructField("id", LongType()), StructField("v", LongType(), True, {"comment": "c"})])
    stored = remember_table(schema, {"path": "/wh/t", "branch": "dev"})
    assert [f.name for f in stored.fields] == ["id", "v"] and stored.fields[1].metadata["comment"] == "c"
    assert remembered_table(StructType.fromJson(stored.jsonValue())) == {"path": "/wh/t", "branch": "dev"}
    with_wh = remember_table(schema, {"path": "db.t", "warehouse": "/wh"})
    assert remembered_table(with_wh) == {"path": "db.t", "warehouse": "/wh"}
    assert names_a_table({"PATH": "/x"}) and not names_a_table({"filter": "x"})
    with pytest.raises(OptionError, match="CREATE TABLE t USING paimon LOCATION"):
        remembered_table(schema)
