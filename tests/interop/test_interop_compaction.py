"""Tables we compacted read the same in pypaimon and pypaimon-rust as in our reader, for every merge engine,
after a full compaction (max level, retractions dropped) and after a universal compaction into an
intermediate level (retractions kept to shadow the level below). Every table of the module is read by both
oracles in one oracle process (the module fixture `built`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog
from pyspark_paimon.table import Table
from tests.interop.helpers import OracleBatch, assert_oracles_agree, assert_same_table, ours_arrow, table_uri

pytestmark = pytest.mark.interop

SCHEMA = "k int not null, v string, n bigint"
ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
    "first-row": {"merge-engine": "first-row"},
}


def _write(t: Table, keys: list[int], v: str | None, n: int, model: dict[int, dict[str, Any]], engine: str) -> None:
    """Write the rows and apply them to ``model`` (key -> row) by the merge engine's rules, as plain dicts: the
    rows every reader must return, independently of any reader."""
    t.write_arrow(
        pa.table(
            {
                "k": pa.array(keys, pa.int32()),
                "v": pa.array([v] * len(keys), pa.string()),
                "n": pa.array([n] * len(keys), pa.int64()),
            }
        )
    )
    for k in keys:
        old, new = model.get(k), {"k": k, "v": v, "n": n}
        if old is None or engine == "deduplicate":
            model[k] = new
        elif engine == "partial-update":
            model[k] = {c: old[c] if x is None else x for c, x in new.items()}
        elif engine == "aggregation":  # n summed, v keeps its last non-null value
            model[k] = {"k": k, "v": old["v"] if v is None else v, "n": old["n"] + n}
        # first-row: the first row of a key stays


def _sorted_rows(rows: Any) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["k"])


def _engine_table(wh: str, engine: str, model: dict[int, dict[str, Any]]) -> str:
    t = Catalog(wh).create_table(
        f"db.{engine.replace('-', '_')}",
        SCHEMA,
        primary_keys=["k"],
        options={"bucket": "2", "write-only": "true", **ENGINES[engine]},
    )
    for i in range(5):
        _write(
            t, list(range(i, 60, 2)), None if engine == "partial-update" and i % 2 else f"w{i}", i + 1, model, engine
        )
    assert t.maintenance.compact(full=True)
    # On top of the compacted files: level 0, except for first-row, whose automatic compaction moves level 0 up
    # at once as Java's does (Java's batch reads of first-row tables skip level 0).
    t.update_schema().set_options({"write-only": "false"}).commit()
    _write(t, [1, 2, 70], "after", 100, model, engine)
    levels = {e.file.level for e in t.store.live_entries(t.latest_snapshot())}
    assert levels == ({4, 5} if engine == "first-row" else {0, 5})
    return t.identifier


def _rowkind_table(wh: str) -> str:
    t = Catalog(wh).create_table(
        "db.rowkind",
        SCHEMA + ", kind string",
        primary_keys=["k"],
        options={"bucket": "1", "write-only": "true", "rowkind.field": "kind"},
    )
    t.write_arrow(
        pa.table(
            {
                "k": pa.array(range(20000), pa.int32()),
                "v": ["base"] * 20000,
                "n": pa.array(range(20000), pa.int64()),
                "kind": ["+I"] * 20000,
            }
        )
    )
    assert t.maintenance.compact(full=True)
    rows: list[dict[str, Any]] = [{"k": 2, "v": None, "n": 0, "kind": "-D"}]
    rows += [{"k": 100000 + i, "v": "x", "n": i, "kind": "+I"} for i in range(4)]
    for r in rows:
        t.write_arrow(pa.Table.from_pylist([r], schema=t.schema.arrow_schema()))
    assert t.maintenance.compact(full=False)  # universal: level 4 above the base, the -D kept
    assert sorted({e.file.level for e in t.store.live_entries(t.latest_snapshot())}) == [4, 5]
    return t.identifier


def _unaware_table(wh: str) -> str:
    """20 small files of an unaware-bucket append table compacted into one (Java's AppendCompactCoordinator)."""
    t = Catalog(wh).create_table("db.unaware", SCHEMA, options={"write-only": "true"})
    for i in range(20):  # an append table: every row is kept, so the model is simply all of them
        keys = list(range(i * 100, i * 100 + 100))
        t.write_arrow(
            pa.table({"k": pa.array(keys, pa.int32()), "v": [f"w{i}"] * 100, "n": pa.array([i] * 100, pa.int64())})
        )
    assert t.maintenance.compact() and len(t.store.live_entries(t.latest_snapshot())) == 1
    return t.identifier


DV_ENGINES = [e for e in ENGINES if e != "first-row"]


def _dv_table(wh: str, engine: str, model: dict[int, dict[str, Any]]) -> str:
    """Three upsert writes into a deletion-vector table (no write-only): each write is compacted at commit with
    lookups, so the superseded rows of the first, larger file are positions in our deletion vectors."""
    t = Catalog(wh).create_table(
        f"db.dv_{engine.replace('-', '_')}",
        SCHEMA,
        primary_keys=["k"],
        options={"bucket": "1", "deletion-vectors.enabled": "true", **ENGINES[engine]},
    )
    _write(t, list(range(2000)), "base", 1, model, engine)
    _write(t, [3, 5, 2500], "second", 2, model, engine)
    _write(t, [5, 7], None, 3, model, engine)
    assert t.latest_snapshot().index_manifest and 0 not in {
        e.file.level for e in t.store.live_entries(t.latest_snapshot())
    }
    return t.identifier


@dataclass
class Built:
    """The module's tables (written and compacted by us) and both oracles' reads of them."""

    warehouse: str
    batch: OracleBatch
    models: dict[str, dict[int, dict[str, Any]]]  # engine -> key -> row, of the compacted engine tables
    identifiers: list[str]  # the compacted engine tables, then db.rowkind
    unaware: str
    dv_models: dict[str, dict[int, dict[str, Any]]]
    dv_identifiers: list[str]


@pytest.fixture(scope="module")
def built(module_warehouse: str) -> Built:
    """Every table of the module in one warehouse, read by both oracles in ONE oracle process."""
    wh = module_warehouse
    models: dict[str, dict[int, dict[str, Any]]] = {e: {} for e in ENGINES}
    identifiers = [_engine_table(wh, e, models[e]) for e in ENGINES] + [_rowkind_table(wh)]
    unaware = _unaware_table(wh)
    dv_models: dict[str, dict[int, dict[str, Any]]] = {e: {} for e in DV_ENGINES}
    dv_identifiers = [_dv_table(wh, e, dv_models[e]) for e in DV_ENGINES]
    batch = OracleBatch(wh)
    for name in [*identifiers, unaware, *dv_identifiers]:
        batch.read(name, name)
    return Built(wh, batch.run(), models, identifiers, unaware, dv_models, dv_identifiers)


def test_oracles_read_our_compacted_tables(built: Built) -> None:
    wh, batch, identifiers = built.warehouse, built.batch, built.identifiers
    for name in identifiers:
        theirs = assert_oracles_agree(batch.tables[name], name)
        ours = ours_arrow(table_uri(wh, name))
        assert_same_table(ours, theirs, name)
    for engine, identifier in zip(ENGINES, identifiers):  # and both equal the model of the writes
        theirs_rows = _sorted_rows(batch.tables[identifier]["pypaimon"].to_pylist())
        assert theirs_rows == _sorted_rows(built.models[engine].values()), engine
    rowkind_keys = sorted(r["k"] for r in batch.tables["db.rowkind"]["pypaimon"].to_pylist())
    assert rowkind_keys == sorted(set(range(20000)) - {2} | set(range(100000, 100004)))
    assert 2 not in ours_arrow(table_uri(wh, "db.rowkind")).column("k").to_pylist()
    assert identifiers[0] == "db.deduplicate"


def test_oracles_read_our_compacted_unaware_append_table(built: Built) -> None:
    theirs = assert_oracles_agree(built.batch.tables[built.unaware], built.unaware)
    assert theirs.num_rows == 2000
    assert_same_table(ours_arrow(table_uri(built.warehouse, built.unaware)), theirs, built.unaware)


def test_oracles_read_our_deletion_vector_tables(built: Built) -> None:
    """pypaimon and pypaimon-rust read exactly the model of the writes into the deletion-vector tables
    (`_dv_table`), as we do."""
    for engine, name in zip(DV_ENGINES, built.dv_identifiers):
        theirs = assert_oracles_agree(built.batch.tables[name], name)
        assert_same_table(ours_arrow(table_uri(built.warehouse, name)), theirs, name)
        assert _sorted_rows(theirs.to_pylist()) == _sorted_rows(built.dv_models[engine].values()), engine
