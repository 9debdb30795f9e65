"""``t.branches.merge`` / ``cherry_pick`` / ``publish`` (issue 24): three-way merges by key from the fork point the
branch lineage records (append tables by data file), one commit on the target."""

from __future__ import annotations

import threading
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyspark_paimon import Catalog, Table
from pyspark_paimon.errors import BranchError, BranchMergeConflictError, OptionError


def _pk(catalog: Catalog, name: str = "pk") -> Table:
    return catalog.create_table(
        f"db.{name}", "id BIGINT, v BIGINT, s STRING", primary_keys=["id"], options={"bucket": "2"}
    )


def _rows(t: Table) -> dict[int, tuple]:
    return {r["id"]: (r["v"], r["s"]) for r in t.scan().to_arrow().to_pylist()}


def _w(t: Table, ids: list[int], vs: list[int], s: str = "x") -> None:
    t.write_arrow(pa.table({"id": ids, "v": vs, "s": [s] * len(ids)}, schema=t.schema.arrow_schema()))


def test_pk_merge_applies_source_changes_and_keeps_target_changes(catalog: Catalog) -> None:
    t = _pk(catalog)
    _w(t, [1, 2, 3, 4], [10, 20, 30, 40])
    t.branches.create("fix")
    fix = t.on_branch("fix")
    _w(fix, [2, 5], [22, 50], "f")  # update 2, insert 5
    fix.delete("id = 3")
    _w(t, [4, 6], [44, 60], "m")  # main moved on: other keys
    before = t.store.snapshots.latest_id()
    result = t.branches.merge("fix")
    assert result.snapshot_id == (before or 0) + 1 and result.conflicts == 0
    assert (result.upserted, result.deleted, result.target_unchanged) == (2, 1, False)
    assert _rows(t) == {1: (10, "x"), 2: (22, "f"), 4: (44, "m"), 5: (50, "f"), 6: (60, "m")}
    assert _rows(fix) == {1: (10, "x"), 2: (22, "f"), 4: (40, "x"), 5: (50, "f")}  # the source is untouched
    # Merging again changes nothing: every change of 'fix' is already in main.
    again = t.branches.merge("fix")
    assert again.snapshot_id is None and again.upserted == again.deleted == 0
    # Main changes a merged key again, 'fix' changes another: only the new change of 'fix' is merged.
    _w(t, [2], [99], "m")
    _w(fix, [1], [11], "f")
    third = t.branches.merge("fix")
    assert (third.conflicts, third.upserted) == (0, 1) and _rows(t)[2] == (99, "m") and _rows(t)[1] == (11, "f")


def test_pk_merge_conflicts_fail_then_resolve(catalog: Catalog) -> None:
    t = _pk(catalog)
    _w(t, [1, 2, 3], [10, 20, 30])
    t.branches.create("b")
    b = t.on_branch("b")
    _w(b, [1, 2, 3], [11, 21, 31], "b")
    _w(t, [1, 3], [12, 31], "m")  # key 1 differs; key 3 differs too (s); key 2 only on b
    _w(t, [3], [31], "b")  # key 3 now equal on both sides: merged already
    head = t.store.snapshots.latest_id()
    with pytest.raises(BranchMergeConflictError, match=r"1 key\(s\) changed differently.*: 1\. Nothing") as info:
        t.branches.merge("b")
    assert info.value.count == 1 and info.value.keys.to_pylist() == [{"id": 1}]
    assert t.store.snapshots.latest_id() == head  # nothing written
    kept = t.branches.merge("b", on_conflict="target")
    assert kept.conflicts == 1 and _rows(t)[1] == (12, "m") and _rows(t)[2] == (21, "b")
    # The merged state is the next merge's base: the resolved conflict is not seen again.
    again = t.branches.merge("b", on_conflict="source")
    assert (again.conflicts, again.snapshot_id, _rows(t)[1]) == (0, None, (12, "m"))
    t.branches.create("c")
    _w(t.on_branch("c"), [2], [23], "c")
    _w(t, [2], [24], "m")
    took = t.branches.merge("c", on_conflict="source")
    assert took.conflicts == 1 and _rows(t)[2] == (23, "c")
    with pytest.raises(OptionError, match="on_conflict"):
        t.branches.merge("b", on_conflict="theirs")


def test_merge_main_into_branch_uses_the_same_fork(catalog: Catalog) -> None:
    t = _pk(catalog)
    _w(t, [1, 2], [10, 20])
    t.branches.create("b")
    _w(t, [3], [30], "m")
    t.delete("id = 1")
    result = t.branches.merge("main", into="b")
    assert (result.source, result.into, result.upserted, result.deleted) == ("main", "b", 1, 1)
    assert _rows(t.on_branch("b")) == _rows(t)


def test_cherry_pick_one_commit(catalog: Catalog) -> None:
    t = _pk(catalog)
    _w(t, [1, 2], [10, 20])
    t.branches.create("dev")
    dev = t.on_branch("dev")
    _w(dev, [3], [30], "one")
    _w(dev, [1], [11], "two")
    picked = dev.store.snapshots.latest_id()
    _w(dev, [2], [22], "three")
    result = t.branches.cherry_pick(f"dev.{picked}", onto="main")
    assert (result.upserted, result.deleted) == (1, 0)
    assert _rows(t) == {1: (11, "two"), 2: (20, "x")}
    with pytest.raises(BranchError, match="first commit"):
        t.branches.cherry_pick(1)


def test_append_merge_by_file_lineage(catalog: Catalog) -> None:
    t = catalog.create_table("db.app", "id BIGINT, v BIGINT")
    t.write_arrow(pa.table({"id": [1, 2], "v": [10, 20]}))
    t.write_arrow(pa.table({"id": [3], "v": [30]}))
    t.branches.create("b")
    b = t.on_branch("b")
    b.write_arrow(pa.table({"id": [4], "v": [40]}))
    b.delete("id = 1")  # rewrites the file of 1 and 2
    t.write_arrow(pa.table({"id": [5], "v": [50]}))
    result = t.branches.merge("b")
    assert (result.files_added, result.files_removed) == (2, 1)
    assert sorted(r["id"] for r in t.scan().to_arrow().to_pylist()) == [2, 3, 4, 5]
    # Both sides rewriting the same file is a conflict no on_conflict resolves.
    t.branches.create("c")
    t.on_branch("c").delete("id = 3")
    t.delete("id = 3")
    with pytest.raises(BranchMergeConflictError, match="rewritten or removed on both sides"):
        t.branches.merge("c", on_conflict="source")


def test_merge_refuses_unrelated_schema_and_unknown_branch(catalog: Catalog) -> None:
    t = _pk(catalog)
    _w(t, [1], [10])
    with pytest.raises(BranchError, match="no branch 'nope'"):
        t.branches.merge("nope")
    t.branches.create("b")
    b = t.on_branch("b")
    b.update_schema().add_column("extra", "INT").commit()
    with pytest.raises(BranchError, match="different schemas"):
        t.branches.merge("b")
    seq = catalog.create_table(
        "db.seq", "id BIGINT, v BIGINT", primary_keys=["id"], options={"bucket": "1", "sequence.field": "v"}
    )
    seq.write_arrow(pa.table({"id": [1], "v": [1]}))
    seq.branches.create("b")
    with pytest.raises(BranchError, match="sequence.field"):
        seq.branches.merge("b")


def test_publish_equals_branch_head_when_main_did_not_move(catalog: Catalog) -> None:
    t = _pk(catalog)
    _w(t, [1, 2], [10, 20])
    t.branches.create("audit")
    audit = t.on_branch("audit")
    _w(audit, [3], [30])
    audit.delete("id = 1")
    result = t.branches.publish("audit")
    assert result.target_unchanged and _rows(t) == _rows(audit)


def test_publish_under_a_live_writer_loses_no_commit(catalog: Catalog) -> None:
    """A writer keeps committing new keys on main while branches are published: every publish lands and every
    acknowledged writer row is in main afterwards (fast_forward refused here: issue 24)."""
    t = _pk(catalog)
    _w(t, [0], [0])
    stop = threading.Event()
    acked: list[int] = []
    errors: list[BaseException] = []

    def writer() -> None:
        writer_table = Table.open(t.uri)
        k = 1000
        try:
            while not stop.is_set() and k < 1040:
                _w(writer_table, [k], [k], "w")
                acked.append(k)
                k += 1
                stop.wait(0.05)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for i in range(3):
            name = f"audit{i}"
            t.branches.create(name)
            _w(t.on_branch(name), [i + 1], [i + 1], "a")
            t.branches.publish(name)
    finally:
        stop.set()
        thread.join()
    assert not errors
    rows = _rows(t)
    assert all(k in rows for k in acked) and all(i + 1 in rows for i in range(3))


def test_forced_fast_forward_reports_what_it_discards_and_keeps_retained_tags(catalog: Catalog) -> None:
    t = _pk(catalog)
    _w(t, [1], [10])
    t.branches.create("b")
    _w(t.on_branch("b"), [2], [20])
    _w(t, [3, 4], [30, 40], "m")  # snapshot 2 of main: not in 'b'
    _w(t, [5], [50], "m")  # snapshot 3
    t.tags.create("weekly", time_retained="7 d")
    t.tags.create("plain", snapshot_id=2)
    result = t.branches.fast_forward("b", force=True)
    assert result.discarded_snapshots == [2, 3] and result.discarded_records == 3
    assert result.discarded_tags == ["plain"] and result.kept_tags == ["weekly"]
    assert {tag.name for tag in t.tags.list()} == {"weekly"}
    assert _rows(t) == {1: (10, "x"), 2: (20, "x")}
    assert sorted(r["id"] for r in t.scan(tag="weekly").to_arrow().to_pylist()) == [1, 3, 4, 5]


def test_merge_of_a_branch_of_a_branch_starts_at_the_true_fork_point(catalog: Catalog) -> None:
    """A branch created from another branch merges into main from where its parent left main, so the parent's
    commits it carries are merged too (they were once skipped: the base was the child's earliest snapshot)."""
    t = _pk(catalog, "nested")
    _w(t, [1, 2], [10, 20])
    t.branches.create("b1")
    b1 = t.on_branch("b1")
    _w(b1, [3], [30], "b1")
    b1.branches.create("b2")
    b2 = t.on_branch("b2")
    _w(b2, [4], [40], "b2")
    _w(b1, [5], [50], "b1")  # after b2 left b1: not in b2
    _w(t, [2], [22], "m")
    result = t.branches.merge("b2")
    assert result.base == "b1.1" and result.conflicts == 0
    assert _rows(t) == {1: (10, "x"), 2: (22, "m"), 3: (30, "b1"), 4: (40, "b2")}
    # Siblings-by-descent: b1 into b2 starts where b2 left b1, so only key 5 moves.
    moved = t.branches.merge("b1", into="b2")
    assert result.base != moved.base and (moved.upserted, moved.deleted) == (1, 0)
    assert _rows(b2) == {1: (10, "x"), 2: (20, "x"), 3: (30, "b1"), 4: (40, "b2"), 5: (50, "b1")}


def _recipe(page: str, heading: str) -> str:
    """The first Python block under ``heading`` in docs/``page``: the test runs what the docs print."""
    text = (Path(__file__).resolve().parents[1] / "docs" / page).read_text()
    section = text[text.index(heading) :]
    start = section.index("```python\n") + len("```python\n")
    return section[start : section.index("```", start)]


# amount type -> (the days' amounts, main's amounts after the correction); 3 and 4 are 100 times too big
_RECIPE_AMOUNTS: dict[str, tuple[list[list[Any]], dict[int, Any]]] = {
    "BIGINT": ([[10, 20, 30], [300_000, 4_000_000, 50], [60]], {1: 10, 2: 20, 3: 3_000, 4: 40_000, 5: 50, 6: 60}),
    # the docs' orders table: DOUBLE values (Arrow's inference for Python floats) go in as their decimals
    "DECIMAL(10, 2)": (
        [[10.5, 20.25, 30.0], [300_025.0, 4_000_010.0, 50.75], [19.99]],
        {i: Decimal(v) for i, v in enumerate(["10.50", "20.25", "3000.25", "40000.10", "50.75", "19.99"], 1)},
    ),
    "DOUBLE": (
        [[10.5, 20.25, 30.0], [300_025.0, 4_000_010.0, 50.75], [19.99]],
        {1: 10.5, 2: 20.25, 3: 3000.25, 4: 40000.1, 5: 50.75, 6: 19.99},
    ),
}


@pytest.mark.parametrize("amount_type", sorted(_RECIPE_AMOUNTS))
def test_the_docs_correction_recipe_runs_as_written(catalog: Catalog, amount_type: str) -> None:
    """docs/branches.md's recipe (diff, update on a branch, review, publish) on a table whose feeding job keeps
    writing to main after the bad batch: the correction lands and the job's newer rows stay. Amounts as BIGINT,
    DECIMAL(10, 2) (the docs' ``orders``) and DOUBLE (its filter compares a DOUBLE column): issue 32."""
    t = catalog.create_table(
        f"db.payments_{amount_type.split('(')[0].lower()}",
        f"id BIGINT, dt STRING, amount {amount_type}",
        primary_keys=["id"],
        options={"bucket": "2"},
    )
    days, corrected = _RECIPE_AMOUNTS[amount_type]

    def day(ids: list[int], dt: str, amounts: list[Any]) -> None:
        t.write_arrow(pa.table({"id": pa.array(ids, pa.int64()), "dt": [dt] * len(ids), "amount": amounts}))

    day([1, 2, 3], "2025-08-10", days[0])
    t.tags.create("2025-08-10")
    day([3, 4, 5], "2025-08-11", days[1])  # 3 and 4 carry amounts 100 times too big
    t.tags.create("2025-08-11")
    day([6], "2025-08-12", days[2])  # the job keeps writing to main
    scope: dict[str, object] = {"t": t}
    exec(compile(_recipe("branches.md", "## A correction recipe"), "docs/branches.md", "exec"), scope)
    bad = scope["bad"]
    assert isinstance(bad, pa.Table)
    assert sorted(zip(bad.column("rowkind").to_pylist(), bad.column("id").to_pylist())) == [
        ("+I", 4),
        ("+I", 5),
        ("+U", 3),
        ("-U", 3),
    ]
    review = t.diff("fix.2025-08-11", "fix")
    assert sorted(zip(review.column("rowkind").to_pylist(), review.column("id").to_pylist())) == [
        ("+U", 3),
        ("+U", 4),
        ("-U", 3),
        ("-U", 4),
    ]
    main = {r["id"]: r["amount"] for r in t.scan().to_arrow().to_pylist()}
    assert main == corrected


def test_the_docs_correction_recipe_stops_on_a_key_the_job_changed_since(catalog: Catalog) -> None:
    """As the docs say: a corrected key the job also updated since the fork stops the publish, nothing changes,
    and ``on_conflict="source"`` lets the correction win."""
    t = catalog.create_table(
        "db.payments2", "id BIGINT, dt STRING, amount BIGINT", primary_keys=["id"], options={"bucket": "2"}
    )

    def day(ids: list[int], dt: str, amounts: list[int]) -> None:
        t.write_arrow(pa.table({"id": ids, "dt": [dt] * len(ids), "amount": amounts}, schema=t.schema.arrow_schema()))

    day([1], "2025-08-10", [10])
    t.tags.create("2025-08-10")
    day([3], "2025-08-11", [300_000])
    t.tags.create("2025-08-11")
    day([3], "2025-08-11", [300_001])  # the job rewrites the bad key after the tag
    recipe = _recipe("branches.md", "## A correction recipe")
    head = t.store.snapshots.latest_id()
    with pytest.raises(BranchMergeConflictError, match="1 key"):
        exec(compile(recipe, "docs/branches.md", "exec"), {"t": t})
    assert t.store.snapshots.latest_id() == head
    t.branches.publish("fix", on_conflict="source")
    assert {r["id"]: r["amount"] for r in t.scan().to_arrow().to_pylist()} == {1: 10, 3: 3_000}


def test_a_publish_overtaken_by_a_writer_is_planned_again(catalog: Catalog) -> None:
    """A writer commits key 1 on main after the publish compared both sides and before it commits: the publish
    must not land its plan (key 1 = the branch's row, as if main had not changed it) over the writer's commit,
    which would replace an acknowledged row without a conflict. It re-plans on the new head and sees key 1 changed
    on both sides."""
    from pyspark_paimon.datasource.versions import branch_merge

    t = _pk(catalog, "overtaken")
    _w(t, [1, 2], [10, 20])
    t.branches.create("fix")
    _w(t.on_branch("fix"), [1], [11], "f")
    real = branch_merge._key_changes
    raced: list[int] = []

    def racing_key_changes(*args, **kwargs):  # type: ignore[no-untyped-def]
        planned = real(*args, **kwargs)
        if not raced:
            snap = Table.open(t.uri).write_arrow(pa.table({"id": [1, 3], "v": [7, 7], "s": ["w", "w"]}))
            assert snap.snapshot_id is not None
            raced.append(snap.snapshot_id)
        return planned

    branch_merge._key_changes = racing_key_changes  # type: ignore[assignment]
    try:
        with pytest.raises(BranchMergeConflictError) as err:
            t.branches.publish("fix")
    finally:
        branch_merge._key_changes = real  # type: ignore[assignment]
    assert err.value.count == 1
    assert t.store.snapshots.latest_id() == raced[0]  # nothing written after the writer's commit
    assert _rows(t) == {1: (7, "w"), 2: (20, "x"), 3: (7, "w")}
    result = t.branches.publish("fix", on_conflict="source")
    assert result.conflicts == 1
    assert _rows(t) == {1: (11, "f"), 2: (20, "x"), 3: (7, "w")}


def _stop_final_record(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every write of the merge record after a merge commit fails (as a kill there would stop it)."""
    from pyspark_paimon.datasource.versions import branch_merge

    failed: list[int] = []

    def fail(store: Any, source: str, into: str, result: Any) -> None:
        failed.append(result.snapshot_id)
        raise OSError("injected failure of the merge record after the commit")

    monkeypatch.setattr(branch_merge, "_record_base", fail)
    return failed


def test_a_merge_record_lost_after_the_commit_still_leads_the_next_merge(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record is written before the commit too, so a failure after the commit (logged, the merge landed)
    leaves the next merge on the merged base: main's later change of a merged key is no conflict."""
    t = _pk(catalog)
    _w(t, [1, 2], [10, 20])
    t.branches.create("b")
    b = t.on_branch("b")
    _w(b, [1], [11], "b")
    failed = _stop_final_record(monkeypatch)
    first = t.branches.merge("b")
    assert failed == [first.snapshot_id] and _rows(t)[1] == (11, "b")
    monkeypatch.undo()
    _w(t, [1], [12], "m")  # main changes the merged key again
    _w(b, [2], [22], "b")
    second = t.branches.merge("b")  # from the fork point, key 1 would be a conflict (11 on b, 12 on main)
    assert second.base == f"b.{first.source_snapshot_id}"
    assert (second.conflicts, _rows(t)) == (0, {1: (12, "m"), 2: (22, "b")})


def test_a_pending_merge_record_whose_commit_never_landed_keeps_the_previous_base(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyspark_paimon.datasource import jobs

    t = _pk(catalog)
    _w(t, [1, 2], [10, 20])
    t.branches.create("b")
    b = t.on_branch("b")
    _w(b, [1], [11], "b")
    first = t.branches.merge("b")  # recorded completely
    _w(b, [2], [21], "b")
    failed = _stop_final_record(monkeypatch)
    second = t.branches.merge("b")  # landed; only its pending record was written
    assert failed == [second.snapshot_id]
    monkeypatch.undo()
    _w(b, [1], [13], "b")

    def no_commit(*args: Any, **kwargs: Any) -> Any:
        raise OSError("injected failure of the commit")

    monkeypatch.setattr(jobs.WriteJob, "commit", no_commit)
    with pytest.raises(OSError, match="injected failure of the commit"):
        t.branches.merge("b")  # its pending record names a commit that never lands
    monkeypatch.undo()
    _w(t, [2], [24], "m")  # main changes key 2 after the second merge: no conflict from its base
    third = t.branches.merge("b")
    assert first.base != second.base
    assert third.base == f"b.{second.source_snapshot_id}"
    assert (third.conflicts, _rows(t)) == (0, {1: (13, "b"), 2: (24, "m")})
