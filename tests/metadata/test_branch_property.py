"""Property test of branch operations through the real ``Table`` API, reading real rows.

A hypothesis state machine drives a small partitioned table (primary-key or append) through writes to any
branch (appends/upserts and partition overwrites, which are the deletes), tags, tag deletion and expiration,
branch creation from a tag / a snapshot id / the latest snapshot / empty, branch drops, fast-forwards into
main (forced, and safe: a refusal must change nothing), rollbacks, snapshot expiration on any branch and
orphan-file removal. After *every* step every snapshot and every tag of every branch must read back exactly
the rows the model recorded when that commit was made, and the snapshot ids, tag names and branch names on
disk must be the ones the model predicts.

The model keeps each commit's content by snapshot uuid (a commit's rows never change, wherever it is copied:
branch creation and fast-forward copy snapshot files, they do not make new commits) and, per branch, which
snapshot id holds which commit and which tag names which commit.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from pyspark_paimon import Catalog
from pyspark_paimon.errors import BranchConflictError, TagError
from pyspark_paimon.metadata.timeutil import now_millis

EXAMPLES = int(os.environ.get("PAIMON_HYPOTHESIS_EXAMPLES", "25"))
DAY_MS = 86_400_000
PARTS = ["a", "b"]
Row = tuple[str, int, str]  # (dt, id, v)

ROWS = st.lists(
    st.tuples(st.sampled_from(PARTS), st.integers(0, 3), st.sampled_from(["p", "q", "r", "s"])), min_size=1, max_size=4
)


# ------------------------------------------------------------------------------------------- model
@dataclass
class BranchModel:
    snaps: dict[int, str] = field(default_factory=dict)  # snapshot id -> commit uuid
    tags: dict[str, tuple[int, str, bool]] = field(default_factory=dict)  # name -> (snapshot id, uuid, retained)

    def latest(self) -> int | None:
        return max(self.snaps) if self.snaps else None


def apply_write(base: tuple[Row, ...], rows: list[Row], overwrite: str | None, pk: bool) -> tuple[Row, ...]:
    """Rows after writing ``rows`` on top of ``base`` (sorted, so equal contents compare equal)."""
    kept = [r for r in base if overwrite is None or r[0] != overwrite]
    if not pk:
        return tuple(sorted(kept + rows))
    merged = {(r[0], r[1]): r for r in kept}
    for r in rows:  # last write per key wins, also within one batch
        merged[(r[0], r[1])] = r
    return tuple(sorted(merged.values()))


def arrow_rows(t: pa.Table) -> tuple[Row, ...]:
    return tuple(sorted((r["dt"], r["id"], r["v"]) for r in t.to_pylist()))


# ------------------------------------------------------------------------------------------- machine
class BranchMachine(RuleBasedStateMachine):
    PK = True

    def __init__(self) -> None:
        super().__init__()
        self._tmp = tempfile.TemporaryDirectory()
        pk = ["dt", "id"] if self.PK else []
        # write-only: the model counts one snapshot per write, so no automatic COMPACT snapshots in between.
        # Tags with a retention expire only in the model's explicit expire steps, not after a commit
        # (tests/metadata/test_post_commit.py covers that).
        self.table = Catalog(self._tmp.name).create_table(
            "db.t",
            "id bigint, v string, dt string",
            partition_keys=["dt"],
            primary_keys=pk,
            options={"bucket": "2", "write-only": "true"} if self.PK else {"tag.time-expire-enabled": "false"},
        )
        self.branches: dict[str, BranchModel] = {"main": BranchModel()}
        self.contents: dict[str, tuple[Row, ...]] = {}
        self.counter = 0
        self.log: list[str] = []

    def teardown(self) -> None:
        self._tmp.cleanup()

    # -- helpers ------------------------------------------------------------------------------------
    def _did(self, what: str) -> None:
        self.log.append(what)
        try:
            event(what.split()[0])
        except Exception:  # noqa: BLE001 - outside a hypothesis run (the scripted test)
            pass

    def _pick(self, seq: list, pick: int):  # noqa: ANN202
        return sorted(seq)[pick % len(seq)]

    def _with_sources(self) -> list[str]:
        return [b for b in self.branches if self._sources(b)]

    def _with_tags(self) -> list[str]:
        return [b for b in self.branches if self.branches[b].tags]

    def _with_snaps(self) -> list[str]:
        return [b for b in self.branches if self.branches[b].snaps]

    def _forwardable(self) -> list[str]:
        return [b for b in self._with_snaps() if b != "main"]

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _bt(self, b: str):  # noqa: ANN202
        return self.table if b == "main" else self.table.on_branch(b)

    def _sources(self, b: str) -> dict[int, str]:
        """Snapshot ids a tag/branch can be made from: live snapshots, plus expired ones a tag preserved."""
        m = self.branches[b]
        out = dict(m.snaps)
        by_id: dict[int, set[str]] = {}
        for sid, uuid, _ in m.tags.values():
            by_id.setdefault(sid, set()).add(uuid)
        for sid, uuids in by_id.items():
            if sid not in out and len(uuids) == 1:
                out[sid] = next(iter(uuids))
        return out

    # -- writes -------------------------------------------------------------------------------------
    @initialize(rows=ROWS, more=ROWS)
    def seed(self, rows: list[Row], more: list[Row]) -> None:
        """Two commits on main, so every run starts with something to tag, branch and expire."""
        self.write(0, rows, None, False)
        self.write(0, more, None, False)

    @rule(pick=st.integers(0, 100), rows=ROWS, overwrite=st.sampled_from([None, None, "a", "b"]), empty=st.booleans())
    def write(self, pick: int, rows: list[Row], overwrite: str | None, empty: bool) -> None:
        b = self._pick(list(self.branches), pick)
        m = self.branches[b]
        if overwrite is not None:
            # Overwriting a partition deletes what it held; an empty overwrite deletes the partition.
            rows = [] if empty else [(overwrite, i, v) for _, i, v in rows]
        latest = m.latest()
        base = self.contents[m.snaps[latest]] if latest is not None else ()
        data = pa.table(
            {
                "id": pa.array([r[1] for r in rows], pa.int64()),
                "v": pa.array([r[2] for r in rows], pa.string()),
                "dt": pa.array([r[0] for r in rows], pa.string()),
            }
        )
        self._did(f"write {b} {rows} overwrite={overwrite}")
        bt = self._bt(b)
        if overwrite is None:
            snap = bt.write_arrow(data)
        else:
            snap = bt.write_arrow(data, mode="overwrite", overwrite_partition={"dt": overwrite})
        if snap.snapshot_id is None:  # nothing to commit (an empty overwrite of an empty partition)
            assert overwrite is not None and not rows
            return
        assert snap.snapshot_id == (latest or 0) + 1, (b, snap.snapshot_id, latest)
        uuid = bt.snapshot(snap.snapshot_id).uuid
        m.snaps[snap.snapshot_id] = uuid
        self.contents[uuid] = apply_write(base, rows, overwrite, self.PK)

    @precondition(lambda self: len(self.branches) > 1)
    @rule(pick=st.integers(0, 100), rows=ROWS)
    def write_to_branch(self, pick: int, rows: list[Row]) -> None:
        """An upsert on a branch other than main (weights branch writes up, so fast-forwards happen)."""
        others = sorted(b for b in self.branches if b != "main")
        self.write(sorted(self.branches).index(self._pick(others, pick)), rows, None, False)

    # -- tags ---------------------------------------------------------------------------------------
    @precondition(lambda self: self._with_sources())
    @rule(pick=st.integers(0, 100), which=st.integers(0, 100), retained=st.booleans())
    def create_tag(self, pick: int, which: int, retained: bool) -> None:
        b = self._pick(self._with_sources(), pick)
        sources = self._sources(b)
        sid = self._pick(list(sources), which)
        name = self._name("t")
        self._did(f"create_tag {b} {name} {sid} retained={retained}")
        tag = self._bt(b).tags.create(name, snapshot_id=sid, time_retained=1 if retained else None)
        assert tag.snapshot.id == sid and tag.snapshot.uuid == sources[sid]
        self.branches[b].tags[name] = (sid, sources[sid], retained)

    @precondition(lambda self: self._with_tags())
    @rule(pick=st.integers(0, 100), which=st.integers(0, 100), clean=st.booleans())
    def delete_tag(self, pick: int, which: int, clean: bool) -> None:
        b = self._pick(self._with_tags(), pick)
        m = self.branches[b]
        name = self._pick(list(m.tags), which)
        self._did(f"delete_tag {b} {name} clean={clean}")
        assert self._bt(b).tags.delete(name, clean_files=clean).deleted == [name]
        del m.tags[name]

    @precondition(lambda self: self._with_tags())
    @rule(pick=st.integers(0, 100), all_tags=st.booleans(), clean=st.booleans())
    def expire_tags(self, pick: int, all_tags: bool, clean: bool) -> None:
        b = self._pick(self._with_tags(), pick)
        m = self.branches[b]
        self._did(f"expire_tags {b} all={all_tags} clean={clean}")
        if all_tags:
            expired = self._bt(b).tags.expire(older_than=now_millis() + DAY_MS, clean_files=clean)
            expected = set(m.tags)
        else:
            time.sleep(0.01)  # the retained tags (1 ms) are past their retention
            expired = self._bt(b).tags.expire(clean_files=clean)
            expected = {n for n, (_, _, r) in m.tags.items() if r}
        assert set(expired.deleted) == expected, (expired, expected)
        for n in expected:
            del m.tags[n]

    # -- branches -----------------------------------------------------------------------------------
    @rule(
        pick=st.integers(0, 100), how=st.sampled_from(["tag", "snapshot", "latest", "empty"]), which=st.integers(0, 100)
    )
    @precondition(lambda self: len(self.branches) < 5)
    def create_branch(self, pick: int, how: str, which: int) -> None:
        src = self._pick(list(self.branches), pick)
        m = self.branches[src]
        new = BranchModel()
        name = self._name("b")
        bt = self._bt(src)
        if how == "tag":
            if not m.tags:
                return
            tag = self._pick(list(m.tags), which)
            bt.branches.create(name, tag=tag)
            sid, uuid, retained = m.tags[tag]
            new.snaps[sid] = uuid
            new.tags[tag] = (sid, uuid, retained)
        elif how == "snapshot":
            sources = self._sources(src)
            if not sources:
                return
            sid = self._pick(list(sources), which)
            bt.branches.create(name, snapshot_id=sid)
            new.snaps[sid] = sources[sid]
        elif how == "latest":
            bt.branches.create(name)
            if m.snaps:
                new.snaps[m.latest()] = m.snaps[m.latest()]  # type: ignore[index]
        else:
            bt.branches.create(name, empty=True)
        self._did(f"create_branch {name} from {src} {how} -> {new}")
        self.branches[name] = new

    @precondition(lambda self: len(self.branches) > 1)
    @rule(pick=st.integers(0, 100), clean=st.booleans())
    def delete_branch(self, pick: int, clean: bool) -> None:
        others = [b for b in self.branches if b != "main"]
        b = self._pick(others, pick)
        self._did(f"delete_branch {b} clean={clean}")
        assert self.table.branches.delete(b, clean_files=clean).deleted == [b]
        del self.branches[b]

    @precondition(lambda self: self._forwardable())
    @rule(pick=st.integers(0, 100), force=st.booleans())
    def fast_forward(self, pick: int, force: bool) -> None:
        b = self._pick(self._forwardable(), pick)
        self._did(f"fast_forward {b} force={force}")
        try:
            result = self.table.branches.fast_forward(b, force=force)
        except BranchConflictError:
            assert not force
            self._did("  refused")
            return  # the invariant checks that nothing changed
        self._did(f"  published force={force}")
        src, main = self.branches[b], self.branches["main"]
        e = min(src.snaps)
        snaps = {sid: u for sid, u in main.snaps.items() if sid < e}
        snaps.update(src.snaps)
        head = main.latest()
        # The branch starts above main's head + 1: the publish fills every id up to its first snapshot with
        # main's old content, so a commit prepared on a state main showed cannot land under the published head.
        gap = list(range((head or 0) + 1, e))
        assert result.filler_snapshots == gap
        for sid in gap:
            filler = self.table.snapshot(sid)
            assert filler.delta_record_count == 0
            snaps[filler.id] = filler.uuid  # type: ignore[assignment]
            self.contents[filler.uuid] = self.contents[main.snaps[head]] if head is not None else ()  # type: ignore[index]
        # A forced publish keeps main's tags that carry a retention even on discarded commits (issue 24).
        tags = {
            n: t
            for n, t in main.tags.items()
            if n not in src.tags and (t[0] < e or src.snaps.get(t[0]) == t[1] or (force and t[2]))
        }
        tags.update(src.tags)
        self.branches["main"] = BranchModel(snaps, tags)
        assert result.latest_id == max(snaps)
        if not force:
            assert result.discarded == []

    @precondition(lambda self: self._forwardable())
    @rule(pick=st.integers(0, 100), force=st.booleans())
    def fast_forward_again(self, pick: int, force: bool) -> None:
        """Same as ``fast_forward`` (a second rule doubles its weight in the random walk)."""
        self.fast_forward(pick, force)

    # -- rollback and expiration --------------------------------------------------------------------
    @rule(pick=st.integers(0, 100), which=st.integers(0, 100), to_tag=st.booleans())
    @precondition(lambda self: self._with_snaps())
    def rollback(self, pick: int, which: int, to_tag: bool) -> None:
        b = self._pick(self._with_tags() if to_tag and self._with_tags() else self._with_snaps(), pick)
        m = self.branches[b]
        if to_tag:
            if not m.tags:
                return
            tag = self._pick(list(m.tags), which)
            sid, uuid, _ = m.tags[tag]
            if sid in m.snaps and m.snaps[sid] != uuid:
                # The tag names an id where this branch holds another commit (a forced fast-forward brought the
                # tag over): rolling back would give other rows than the tag's, so it is refused, changing nothing.
                self._did(f"rollback {b} tag={tag} refused")
                with pytest.raises(TagError, match="different commit"):
                    self._bt(b).maintenance.rollback_to(tag=tag)
                return
            self._did(f"rollback {b} tag={tag}")
            self._bt(b).maintenance.rollback_to(tag=tag)
            if sid not in m.snaps:
                m.snaps[sid] = uuid  # the expired tagged snapshot is restored from the tag
        else:
            if not m.snaps:
                return
            sid = self._pick(list(m.snaps), which)
            self._did(f"rollback {b} snapshot={sid}")
            self._bt(b).maintenance.rollback_to(snapshot_id=sid)
        m.snaps = {k: v for k, v in m.snaps.items() if k <= sid}
        m.tags = {k: v for k, v in m.tags.items() if v[0] <= sid}

    @rule(pick=st.integers(0, 100), retain_max=st.integers(1, 2), past=st.booleans())
    @precondition(lambda self: self._with_snaps())
    def expire_snapshots(self, pick: int, retain_max: int, past: bool) -> None:
        b = self._pick(self._with_snaps(), pick)
        m = self.branches[b]
        # older_than in the future: everything but the newest (retain_min=1) may go; in the past: nothing is
        # old enough, so only retain_max forces snapshots out.
        older_than = 1 if past else now_millis() + DAY_MS
        self._did(f"expire_snapshots {b} retain_max={retain_max} past={past}")
        result = self._bt(b).maintenance.expire_snapshots(retain_max=retain_max, retain_min=1, older_than=older_than)
        latest = m.latest()
        keep_from = (latest - retain_max + 1 if past else latest) if latest is not None else 0
        expected = sorted(sid for sid in m.snaps if sid < keep_from)
        assert sorted(result.expired_snapshots) == expected, (result.expired_snapshots, expected)
        for sid in expected:
            del m.snaps[sid]

    @rule()
    def remove_orphans(self) -> None:
        self._did("remove_orphan_files")
        self.table.maintenance.remove_orphan_files(older_than=now_millis() + DAY_MS)

    # -- the property -------------------------------------------------------------------------------
    @invariant()
    def every_snapshot_and_tag_reads_its_rows(self) -> None:
        assert sorted(i.name for i in self.table.branches.list()) == sorted(b for b in self.branches if b != "main")
        for b, m in self.branches.items():
            bt = self._bt(b)
            on_disk = {s.id: s.uuid for s in bt.snapshots()}
            assert on_disk == m.snaps, (b, on_disk, m.snaps, self.log)
            tags = {t.name: (t.snapshot.id, t.snapshot.uuid) for t in bt.tags.list()}
            assert tags == {n: (sid, u) for n, (sid, u, _) in m.tags.items()}, (b, tags, m.tags, self.log)
            for sid, uuid in m.snaps.items():
                got = arrow_rows(bt.scan(read_options={"scan.snapshot-id": str(sid)}).to_arrow())
                assert got == self.contents[uuid], (b, sid, got, self.contents[uuid], self.log)
            for name, (_, uuid, _) in m.tags.items():
                got = arrow_rows(bt.scan(read_options={"scan.tag-name": name}).to_arrow())
                assert got == self.contents[uuid], (b, name, got, self.contents[uuid], self.log)
            latest = m.latest()
            got = arrow_rows(bt.scan().to_arrow())
            assert got == (self.contents[m.snaps[latest]] if latest is not None else ()), (b, got, self.log)


class AppendBranchMachine(BranchMachine):
    PK = False


SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    stateful_step_count=20,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

TestPrimaryKeyBranches = BranchMachine.TestCase
TestPrimaryKeyBranches.settings = SETTINGS
TestAppendBranches = AppendBranchMachine.TestCase
TestAppendBranches.settings = settings(SETTINGS, max_examples=max(1, EXAMPLES // 3))


# ------------------------------------------------------------------------------------------- scripted
@pytest.mark.parametrize("machine_cls", [BranchMachine, AppendBranchMachine])
def test_scripted_sequence_exercises_every_operation(machine_cls: type[BranchMachine]) -> None:
    m = machine_cls()

    def p(kind: str, name: str) -> int:  # the pick that selects branch ``name`` among the eligible ones
        eligible = {
            "branches": list(m.branches),
            "sources": m._with_sources(),
            "tags": m._with_tags(),
            "snaps": m._with_snaps(),
        }[kind]
        return sorted(eligible).index(name)

    def t(branch: str, name: str) -> int:  # the pick that selects tag ``name`` of ``branch``
        return sorted(m.branches[branch].tags).index(name)

    def s(branch: str, sid: int) -> int:  # the pick that selects snapshot ``sid`` of ``branch``
        return sorted(m._sources(branch)).index(sid)

    def o(name: str) -> int:  # the pick that selects non-main branch ``name`` (drop, fast-forward)
        return sorted(x for x in m.branches if x != "main" and m.branches[x].snaps).index(name)

    try:
        steps = [
            lambda: m.write(p("branches", "main"), [("a", 1, "p"), ("b", 2, "q")], None, False),  # main 1
            lambda: m.write(p("branches", "main"), [("a", 1, "r"), ("a", 3, "s")], None, False),  # main 2
            lambda: m.create_tag(p("sources", "main"), s("main", 1), False),  # t1 on main 1
            lambda: m.create_tag(p("sources", "main"), s("main", 2), True),  # t2 on main 2, retained
            lambda: m.create_branch(p("branches", "main"), "tag", t("main", "t1")),  # b3 from t1
            lambda: m.create_branch(p("branches", "main"), "snapshot", s("main", 2)),  # b4 from main 2
            lambda: m.create_branch(p("branches", "main"), "latest", 0),  # b5 from main 2
            lambda: m.create_branch(p("branches", "main"), "empty", 0),  # b6 empty
            lambda: m.write(p("branches", "b3"), [("b", 7, "p")], None, False),  # b3 2
            lambda: m.write(p("branches", "b3"), [("a", 0, "q")], "a", False),  # b3 3: overwrite a
            lambda: m.create_tag(p("sources", "b3"), s("b3", 3), False),  # t7 on b3 3
            lambda: m.write(p("branches", "b6"), [("a", 9, "p")], None, False),  # b6 1
            lambda: m.write(p("branches", "b4"), [], "b", True),  # b4 3: delete partition b
            lambda: m.write(p("branches", "b5"), [("a", 5, "p")], None, False),  # b5 3
            lambda: m.fast_forward(o("b5"), False),  # b5 -> main (safe)
            lambda: m.write(p("branches", "main"), [("b", 5, "s")], None, False),  # main 4
            lambda: m.fast_forward(o("b3"), False),  # b3 -> main: refused
            lambda: m.expire_snapshots(p("snaps", "main"), 1, False),  # main keeps 4 only
            lambda: m.remove_orphans(),
            lambda: m.fast_forward(o("b3"), True),  # b3 -> main, forced
            lambda: m.rollback(p("tags", "main"), t("main", "t1"), True),  # main back to t1
            lambda: m.write(p("branches", "b4"), [("a", 4, "s")], None, False),  # b4 4
            lambda: m.expire_snapshots(p("snaps", "b4"), 2, True),  # b4 keeps 3, 4
            lambda: m.rollback(p("snaps", "b4"), 0, False),  # b4 back to 3
            lambda: m.delete_tag(p("tags", "main"), t("main", "t1"), True),  # main drops t1
            lambda: m.create_tag(p("sources", "main"), s("main", 1), True),  # t8, retained
            lambda: m.expire_tags(p("tags", "main"), False, True),  # retained tags go
            lambda: m.expire_tags(p("tags", "b3"), True, False),  # all tags of b3
            lambda: m.delete_branch(o("b4"), False),  # metadata only
            lambda: m.delete_branch(o("b6"), True),  # with the files only it kept
            lambda: m.remove_orphans(),
            lambda: m.write(p("branches", "main"), [("a", 1, "z")], None, False),
        ]
        m.every_snapshot_and_tag_reads_its_rows()
        for step in steps:
            step()
            m.every_snapshot_and_tag_reads_its_rows()
        ops = {line.split()[0] for line in m.log}
        assert ops >= {
            "write",
            "create_tag",
            "delete_tag",
            "expire_tags",
            "create_branch",
            "delete_branch",
            "fast_forward",
            "rollback",
            "expire_snapshots",
            "remove_orphan_files",
        }, ops
        assert any("refused" in line for line in m.log), m.log
    finally:
        m.teardown()


def test_model_write_semantics() -> None:
    base = (("a", 1, "p"), ("b", 1, "q"))
    assert apply_write(base, [("a", 1, "r"), ("a", 2, "s"), ("a", 2, "t")], None, True) == (
        ("a", 1, "r"),
        ("a", 2, "t"),
        ("b", 1, "q"),
    )
    assert apply_write(base, [], "a", True) == (("b", 1, "q"),)
    assert apply_write(base, [("a", 1, "p")], None, False) == (("a", 1, "p"), ("a", 1, "p"), ("b", 1, "q"))
