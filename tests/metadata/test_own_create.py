"""A create whose answer was lost is the creator's own (``metadata/io/own_create.py``): tags and schema changes
recognise their own landed file by content instead of reporting "already exists", while a file that was there
before, or another writer's, is still refused."""

from __future__ import annotations

import os
from dataclasses import replace

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import TagError
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.io.own_create import create_own
from pyspark_paimon.metadata.refs.tags import TagManager
from pyspark_paimon.metadata.schema.table_schema import SchemaManager
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.model import AtomicType


class LostAnswer(FileIO):
    """A local FileIO whose next create of a path ending with ``suffix`` takes effect and then answers as an object
    store does when the answer is lost: ``raise`` (the error reaches the caller) or ``retried`` (FileIO's retry
    finds the file and reports it as existing)."""

    def __init__(self, suffix: str, how: str) -> None:
        super().__init__("file")
        self.suffix, self.how, self.fired = suffix, how, False

    def try_create(self, path: str, data: bytes) -> bool:
        if self.fired or not path.endswith(self.suffix):
            return super().try_create(path, data)
        self.fired = True
        assert super().try_create(path, data)
        if self.how == "raise":
            raise ConnectionResetError(f"injected lost answer of the create of {path}")
        return False


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table("default.t", "k bigint, v string", primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(pa.table({"k": pa.array([1], pa.int64()), "v": ["a"]}))
    return t


@pytest.mark.parametrize("how", ["raise", "retried"])
def test_create_own_recognises_its_own_file_and_refuses_another(tmp_path: os.PathLike, how: str) -> None:
    path = f"{tmp_path}/f"
    io = LostAnswer("/f", how)
    assert create_own(io, path, b"mine")
    assert io.fired
    assert not create_own(FileIO("file"), path, b"other")  # another writer's content is there


class FailsBefore(FileIO):
    def try_create(self, path: str, data: bytes) -> bool:
        raise ConnectionResetError("injected failure before the create")


def test_create_own_reraises_a_failure_that_left_nothing_of_its_own(tmp_path: os.PathLike) -> None:
    with pytest.raises(ConnectionResetError):
        create_own(FailsBefore("file"), f"{tmp_path}/g", b"x")
    with open(f"{tmp_path}/h", "wb") as f:
        f.write(b"other")
    with pytest.raises(ConnectionResetError):  # another writer's file is there: not this call's create
        create_own(FailsBefore("file"), f"{tmp_path}/h", b"x")


@pytest.mark.parametrize("how", ["raise", "retried"])
def test_a_tag_create_whose_answer_was_lost_succeeds(table: Table, how: str) -> None:
    io = LostAnswer("/tag/tag-t1", how)
    tag = TagManager(FileStore(io, table.store.table_path)).create("t1", table.latest_snapshot())
    assert io.fired
    assert tag.name == "t1"
    assert [t.name for t in table.tags.list()] == ["t1"]
    with pytest.raises(TagError, match="already exists"):  # a create after it still finds it there
        table.tags.create("t1")


@pytest.mark.parametrize("how", ["raise", "retried"])
def test_a_schema_change_whose_answer_was_lost_is_committed_once(table: Table, how: str) -> None:
    io = LostAnswer("/schema/schema-1", how)
    new = SchemaManager(io, table.store.table_path).add_column("note", AtomicType("INT"))
    assert io.fired
    assert new.id == 1
    assert sorted(os.listdir(f"{table.store.table_path}/schema")) == ["schema-0", "schema-1"]
    assert [f.name for f in table.refresh().schema.fields] == ["k", "v", "note"]


def test_a_schema_id_another_writer_holds_is_not_taken_for_its_own(table: Table) -> None:
    manager = SchemaManager(FileIO("file"), table.store.table_path)
    schema = manager.latest()
    assert schema is not None
    assert manager.commit(schema) is True  # its own content: the commit of exactly that schema
    other = SchemaManager(FileIO("file"), table.store.table_path)
    other.add_column("a", AtomicType("INT"))
    taken = manager.latest()
    assert taken is not None and taken.id == 1
    assert manager.commit(replace(taken, comment="mine")) is False
