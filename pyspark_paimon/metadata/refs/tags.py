"""Tags (``tag/tag-<name>``): named, long-lived snapshots (Java's `Tag`, `TagManager`).

A tag file is the tagged snapshot's JSON, plus ``tagCreateTime`` and ``tagTimeRetained`` when the tag has a
retention. Because a tag keeps the snapshot's id and manifest lists, everything it references stays alive
as long as the tag exists, even after the snapshot itself expires (expiration and orphan cleaning compute
what is still used from every snapshot *and tag* of every branch, see ``reachability.py``).

Tags are per branch: a branch's tags live under ``branch/branch-<b>/tag/``.

Renaming a tag only touches the tag file. Deleting or expiring one (``expire.delete_tags`` /
``expire_tags``, ``t.tags.delete``) also deletes the files only that tag kept alive by default, as Java
does, but checked against every snapshot, tag and changelog of *every* branch (``reachability.py``), because a
tag may be the only thing keeping a branch's files alive (apache/paimon#6272). ``clean_files=False`` removes
only the tag file and leaves the rest to ``orphans.remove_orphan_files``. :class:`TagManager` itself only
ever touches tag files.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
from dataclasses import dataclass, replace
from typing import Any, Callable, Literal, Mapping, get_args

from pyspark_paimon.errors import (
    CorruptMetadataError,
    OptionError,
    SnapshotNotFoundError,
    TagError,
    TagNotFoundError,
)
from pyspark_paimon.metadata.effects import taking_effect, took_effect
from pyspark_paimon.metadata.iceberg import sync as iceberg_sync
from pyspark_paimon.metadata.io.jackson import to_jackson_json
from pyspark_paimon.metadata.io.own_create import create_own
from pyspark_paimon.metadata.schema.options import TAG_DEFAULT_TIME_RETAINED, CoreOptions
from pyspark_paimon.metadata.snapshots.consumers import ConsumerManager
from pyspark_paimon.metadata.snapshots.snapshot import (
    MAIN_BRANCH,
    SNAPSHOT_REQUIRED_KEYS,
    Snapshot,
    SnapshotManager,
    require_branch_exists,
)
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.timeutil import duration_millis, local_datetime, now_millis, offset_millis, to_millis

log = logging.getLogger(__name__)

TAG_PREFIX = "tag-"
CREATE_TIME_KEY = "tagCreateTime"
TIME_RETAINED_KEY = "tagTimeRetained"

# Placeholder for the Duration, which Jackson writes as a bare decimal number (not a JSON string).
_DURATION_TOKEN = "\x00paimon-duration\x00"


@dataclass(frozen=True)
class Tag:
    """A tag of a branch: a name for one snapshot, kept (with the files it reads) until the tag is deleted or, with
    a retention, expires. What ``t.tags.create`` / ``replace`` / ``rename`` / ``get`` / ``list`` return."""

    name: str
    """The tag's name."""
    snapshot: Snapshot
    """The snapshot the tag points at, as the tag file stores it (readable after the snapshot expired)."""
    create_time: _dt.datetime | None = None  # local wall clock, as Java's LocalDateTime
    """When the tag was created (local wall clock); None for tags written without one."""
    time_retained_ms: int | None = None
    """How long the tag is kept after ``create_time`` (ms); None: until deleted."""

    @property
    def snapshot_id(self) -> int:
        """The id of the snapshot the tag points at."""
        return self.snapshot.id

    @property
    def expire_time(self) -> _dt.datetime | None:
        """When ``t.tags.expire`` may delete the tag (local wall clock), or None without a retention."""
        if self.create_time is None or self.time_retained_ms is None:
            return None
        return self.create_time + _dt.timedelta(milliseconds=self.time_retained_ms)

    def expired(self, now: _dt.datetime) -> bool:
        """True once ``now`` (local wall clock) is past ``create_time + time_retained``."""
        end = self.expire_time
        return end is not None and now > end


def validate_tag_name(name: str) -> None:
    """Not blank, and not purely numeric so ``scan.version`` is never ambiguous with a snapshot id."""
    if name is None or not isinstance(name, str) or not name.strip():
        raise TagError(f"Tag name must be a non-blank string, got {name!r}.")
    if name.isdigit():
        raise TagError(
            f"Tag name '{name}' is purely numeric; it would be ambiguous with snapshot ids. "
            f"Use a name with a letter in it, e.g. 'v{name}'."
        )
    if "/" in name or "\\" in name:
        raise TagError(f"Tag name '{name}' must not contain '/' or '\\' (it becomes a file name).")
    if name != name.strip():
        raise TagError(f"Tag name {name!r} must not start or end with whitespace.")


def _check_file_name(name: str) -> None:
    """The minimal check for names we did not choose (auto tags may be numeric, e.g. '20250810')."""
    if not name or not name.strip() or "/" in name or "\\" in name:
        raise TagError(f"Invalid tag name {name!r}.")


# ------------------------------------------------------------------------------------------- JSON
def _local_datetime_to_json(dt: _dt.datetime) -> list[int]:
    """Jackson's array form of a LocalDateTime: seconds and nanos are omitted when they (and what follows)
    are zero."""
    out = [dt.year, dt.month, dt.day, dt.hour, dt.minute]
    nanos = dt.microsecond * 1000
    if dt.second or nanos:
        out.append(dt.second)
        if nanos:
            out.append(nanos)
    return out


def _local_datetime_from_json(value: Any) -> _dt.datetime | None:
    if value is None:
        return None
    if isinstance(value, list) and 5 <= len(value) <= 7 and all(isinstance(v, int) for v in value):
        parts = list(value) + [0] * (7 - len(value))
        return _dt.datetime(parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6] // 1000)
    if isinstance(value, str):
        try:
            return _dt.datetime.fromisoformat(value)
        except ValueError:
            pass
    raise CorruptMetadataError(f"Cannot parse tag create time {value!r}.")


def _duration_to_json(ms: int) -> str:
    return f"{ms // 1000}.{(ms % 1000) * 1_000_000:09d}"


def _duration_from_json(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise CorruptMetadataError(f"Cannot parse tag retention {value!r}.")
    if isinstance(value, (int, float)):
        return int(round(float(value) * 1000))
    if isinstance(value, str):
        try:
            return int(round(float(value) * 1000))
        except ValueError:
            try:
                return duration_millis(value, "tagTimeRetained")
            except Exception as e:  # noqa: BLE001 - report as corrupt metadata
                raise CorruptMetadataError(f"Cannot parse tag retention {value!r}: {e}") from e
    raise CorruptMetadataError(f"Cannot parse tag retention {value!r}.")


def tag_to_json(tag: Tag) -> str:
    """The tag file as Java writes it: the snapshot's JSON (Jackson pretty printer), then the two tag keys
    when the tag has a retention."""
    d = tag.snapshot.to_dict()
    if tag.time_retained_ms is None:
        return to_jackson_json(d)
    d[CREATE_TIME_KEY] = _local_datetime_to_json(tag.create_time or _dt.datetime.now())
    d[TIME_RETAINED_KEY] = _DURATION_TOKEN
    text = to_jackson_json(d)
    return text.replace(json.dumps(_DURATION_TOKEN), _duration_to_json(tag.time_retained_ms))


def _corrupt_tag(name: str, source: str, what: str) -> CorruptMetadataError:
    return CorruptMetadataError(
        f"Tag file {source} {what}. Restore the file from a backup, or delete tag '{name}' (t.tags.delete"
        f"('{name}') without clean_files, or remove the file)."
    )


def tag_from_json(name: str, text: str, source: str) -> Tag:
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise _corrupt_tag(name, source, f"is not valid JSON ({e})") from e
    if not isinstance(d, dict):
        raise _corrupt_tag(name, source, "does not hold a JSON object")
    create = d.pop(CREATE_TIME_KEY, None)
    retained = d.pop(TIME_RETAINED_KEY, None)
    missing = sorted(SNAPSHOT_REQUIRED_KEYS - d.keys())
    if missing:
        raise _corrupt_tag(name, source, f"is not a Paimon tag: it lacks the snapshot fields {missing}")
    return Tag(name, Snapshot.from_dict(d, source), _local_datetime_from_json(create), _duration_from_json(retained))


# ------------------------------------------------------------------------------------------- manager
class TagManager:
    """The tags of one branch."""

    def __init__(self, store: FileStore):
        self.store = store
        self.fileio = store.fileio
        self.table_path = store.table_path
        self.branch = store.branch
        self.tag_dir = f"{store.branch_root}/tag"

    def tag_path(self, name: str) -> str:
        return f"{self.tag_dir}/{TAG_PREFIX}{name}"

    def exists(self, name: str) -> bool:
        return self.fileio.exists(self.tag_path(name))

    def list_names(self) -> list[str]:
        return sorted(n[len(TAG_PREFIX) :] for n in self.fileio.list_names(self.tag_dir) if n.startswith(TAG_PREFIX))

    def read_bytes(self, name: str) -> bytes:
        """The tag file's bytes, or a TagNotFoundError listing the branch's tags."""
        try:
            return self.fileio.read_bytes(self.tag_path(name))
        except FileNotFoundError:
            raise TagNotFoundError(
                f"Tag '{name}' does not exist on branch '{self.branch}' of {self.table_path}. "
                f"Existing tags: {self.list_names() or 'none'}."
            ) from None

    def get_tag(self, name: str) -> Tag:
        try:
            text = self.read_bytes(name).decode("utf-8")
        except UnicodeDecodeError as e:
            raise _corrupt_tag(name, self.tag_path(name), f"is not UTF-8 text ({e})") from e
        return tag_from_json(name, text, self.tag_path(name))

    def get(self, name: str) -> Snapshot:
        return self.get_tag(name).snapshot

    def list_tags(self) -> list[Tag]:
        """All tags, ordered by snapshot id then name (tags deleted while we list are skipped).

        A tag made without a retention has no ``tagCreateTime`` in its file (Java writes both or neither);
        its ``create_time`` here falls back to the tag file's modification time (local wall clock), so
        listings (``list_tags``, ``$tags``) show when it was made. Expiry is unaffected: a tag without
        retention never expires."""
        mtimes = {
            st.name[len(TAG_PREFIX) :]: st.mtime_millis
            for st in self.fileio.list_status(self.tag_dir)
            if st.name.startswith(TAG_PREFIX) and not st.is_dir
        }
        tags = []
        for n in sorted(mtimes):
            try:
                tag = self.get_tag(n)
            except TagNotFoundError:
                continue
            if tag.create_time is None and tag.time_retained_ms is None and mtimes[n]:
                tag = replace(tag, create_time=local_datetime(mtimes[n]))
            tags.append(tag)
        return sorted(tags, key=lambda t: (t.snapshot.id, t.name))

    def snapshot_ids(self) -> dict[str, int]:
        """Tag name -> snapshot id, for every tag of the branch (what Iceberg's refs mirror)."""
        return {t.name: t.snapshot.id for t in self.list_tags()}

    def _changed(self) -> None:
        """A tag of the main branch changed: Iceberg readers see tags as Iceberg tags
        (``metadata.iceberg.storage``). The tag operation itself succeeded, so a failure here is logged."""
        if self.branch != MAIN_BRANCH:
            return
        try:
            iceberg_sync.refresh_tags(self.store, self.snapshot_ids)
        except Exception as e:  # noqa: BLE001 - see the docstring
            log.warning("Updating the Iceberg tags of %s failed: %s. The next commit writes them.", self.table_path, e)

    def tagged_snapshot(self, snapshot_id: int) -> Snapshot | None:
        """The snapshot with ``snapshot_id`` as some tag of this branch preserved it, if any."""
        for tag in self.list_tags():
            if tag.snapshot.id == snapshot_id:
                return tag.snapshot
        return None

    def write(self, tag: Tag) -> None:
        """Write (or overwrite) the tag file; atomic on local file systems."""
        with taking_effect(f"writing tag '{tag.name}' of branch '{self.branch}'"):
            self.fileio.write_bytes(self.tag_path(tag.name), tag_to_json(tag).encode("utf-8"))
        took_effect(f"tag '{tag.name}' of branch '{self.branch}' written")
        self._changed()

    def create(
        self,
        name: str,
        snapshot: Snapshot,
        time_retained_ms: int | None = None,
        ignore_if_exists: bool = False,
        *,
        validate: bool = True,
    ) -> Tag:
        """Create tag ``name`` of ``snapshot``; fails if it exists (atomically: of two concurrent creators of the
        same name exactly one wins). ``validate=False`` is for auto-created tags, whose names follow the
        table's period formatter and may be purely numeric (``'20250810'``)."""
        if validate:
            validate_tag_name(name)
        else:
            _check_file_name(name)
        if time_retained_ms is not None and time_retained_ms < 0:
            raise TagError(f"Tag '{name}': time retained must not be negative.")
        tag = Tag(name, _trim(snapshot), _dt.datetime.now() if time_retained_ms is not None else None, time_retained_ms)
        # A tag that exists before this call is someone else's; after the create, a file holding exactly this
        # tag is this call's own create whose answer was lost (create_own), never "already exists".
        path = self.tag_path(name)
        if self.fileio.exists(path) or not create_own(self.fileio, path, tag_to_json(tag).encode("utf-8")):
            if ignore_if_exists:
                return self.get_tag(name)
            raise TagError(
                f"Tag '{name}' already exists on branch '{self.branch}' of {self.table_path}; use "
                "replace_tag to move it, or delete it first."
            )
        took_effect(f"tag '{name}' of branch '{self.branch}' created")
        self._changed()
        return tag

    def replace(self, name: str, snapshot: Snapshot, time_retained_ms: int | None = None) -> Tag:
        """Point the existing tag ``name`` at ``snapshot`` (overwrite, Java's `TagManager`)."""
        if not self.exists(name):
            raise TagNotFoundError(
                f"Tag '{name}' does not exist on branch '{self.branch}' of {self.table_path}, so it cannot be "
                "replaced; create it instead."
            )
        tag = Tag(name, _trim(snapshot), _dt.datetime.now() if time_retained_ms is not None else None, time_retained_ms)
        self.write(tag)
        return tag

    def rename(self, old: str, new: str) -> Tag:
        """Rename a tag. The new file is created atomically-if-absent before the old one is removed, so a crash
        leaves both names (never neither) and an existing ``new`` is never overwritten."""
        validate_tag_name(new)
        path = self.tag_path(old)
        data = self.read_bytes(old)
        if old == new:
            return tag_from_json(new, data.decode("utf-8"), path)
        if not self.fileio.try_create(self.tag_path(new), data):
            raise TagError(
                f"Cannot rename tag '{old}' to '{new}': tag '{new}' already exists on branch "
                f"'{self.branch}'. Delete it first or pick another name."
            )
        took_effect(f"tag '{new}' of branch '{self.branch}' created as a copy of '{old}'")
        self.fileio.delete(path)
        self._changed()
        return tag_from_json(new, data.decode("utf-8"), self.tag_path(new))

    def delete(self, name: str, ignore_if_not_exists: bool = False) -> bool:
        """Remove the tag file (only the file; see the module docstring). True if it existed."""
        with taking_effect(f"deleting tag '{name}' of branch '{self.branch}'"):
            deleted = self.fileio.delete(self.tag_path(name))
        if deleted:
            took_effect(f"tag '{name}' of branch '{self.branch}' deleted")
            self._changed()
            return True
        if ignore_if_not_exists:
            return False
        raise TagNotFoundError(
            f"Tag '{name}' does not exist on branch '{self.branch}' of {self.table_path}. "
            f"Existing tags: {self.list_names() or 'none'}."
        )

    # -- expiration ------------------------------------------------------------------------------
    def expired_tags(self, now: _dt.datetime | None = None, older_than: _dt.datetime | None = None) -> list[Tag]:
        """Tags past their retention (``now > create + retained``), plus, when ``older_than`` is given, tags
        created before it, as Java's ``TagTimeExpire`` decides. A tag without ``tagCreateTime`` uses its file's
        modification time for the ``older_than`` test and never expires by retention (it has none)."""
        now = now or _dt.datetime.now()
        out = []
        for tag in self.list_tags():
            if tag.expired(now):
                out.append(tag)
                continue
            if older_than is not None:
                created = tag.create_time
                if created is None:
                    status = self._status(tag.name)
                    if status is None:
                        continue
                    created = local_datetime(status)
                if created < older_than:
                    out.append(tag)
        return out

    def _status(self, name: str) -> int | None:
        for s in self.fileio.list_status(self.tag_dir):
            if s.name == f"{TAG_PREFIX}{name}":
                return s.mtime_millis
        return None


def _trim(snapshot: Snapshot) -> Snapshot:
    """A snapshot without stray tag keys (a snapshot read from a tag file never has them, but a caller might
    hand us one parsed elsewhere)."""
    if CREATE_TIME_KEY in snapshot.extra or TIME_RETAINED_KEY in snapshot.extra:
        extra = {k: v for k, v in snapshot.extra.items() if k not in (CREATE_TIME_KEY, TIME_RETAINED_KEY)}
        return snapshot.with_changes(extra=extra)
    return snapshot


# ------------------------------------------------------------------------------------------- operations
def find_snapshot(snapshots: SnapshotManager, tags: TagManager, snapshot_id: int) -> Snapshot:
    """Snapshot ``snapshot_id`` of the branch, or, if it expired, the copy a tag of the branch preserved."""
    if snapshots.exists(snapshot_id):
        return snapshots.snapshot(snapshot_id)
    tagged = tags.tagged_snapshot(snapshot_id)
    if tagged is not None:
        return tagged
    return snapshots.snapshot(snapshot_id)  # raises SnapshotNotFoundError naming what exists


def first_snapshot_at_or_after(snapshots: SnapshotManager, tags: TagManager, ts: int) -> Snapshot:
    """Paimon's ``create_tag_from_timestamp`` choice: the first snapshot committed at or after ``ts``, looking
    at the branch's snapshots and at the snapshots its tags preserved (which may have expired)."""
    candidates: list[Snapshot] = []
    snap = snapshots.later_or_equal_time_millis(ts)
    if snap is not None:
        candidates.append(snap)
    candidates.extend(t.snapshot for t in tags.list_tags() if t.snapshot.time_millis >= ts)
    if not candidates:
        raise SnapshotNotFoundError(
            f"No snapshot or tag of branch '{snapshots.branch}' of {snapshots.table_path} was committed at or after "
            f"{ts} (epoch ms, {local_datetime(ts)} local). Pick an earlier time."
        )
    return min(candidates, key=lambda s: (s.time_millis, s.id))


# How a ref (tag or branch) made "as of" an instant picks its snapshot.
TimestampRule = Literal["first-at-or-after", "last-at-or-before"]
"""Which snapshot a ref made "as of" an instant points at: ``'last-at-or-before'`` (the default everywhere: the last
snapshot committed at or before the instant, the table as a read of that instant sees it, as Databend's and
Iceberg's AS OF) or ``'first-at-or-after'`` (the first committed at or after it: Paimon's
``create_tag_from_timestamp``, which the CLI procedure of that name keeps)."""
AT_OR_AFTER: TimestampRule = "first-at-or-after"
AT_OR_BEFORE: TimestampRule = "last-at-or-before"
TIMESTAMP_RULES: tuple[TimestampRule, ...] = get_args(TimestampRule)


def last_snapshot_at_or_before(snapshots: SnapshotManager, tags: TagManager, ts: int) -> Snapshot:
    """The state of the branch at ``ts``: the last snapshot committed at or before it, looking at the branch's
    snapshots and at the snapshots its tags preserved (which may have expired)."""
    candidates: list[Snapshot] = []
    snap = snapshots.earlier_or_equal_time_millis(ts)
    if snap is not None:
        candidates.append(snap)
    candidates.extend(t.snapshot for t in tags.list_tags() if t.snapshot.time_millis <= ts)
    if not candidates:
        raise SnapshotNotFoundError(
            f"No snapshot or tag of branch '{snapshots.branch}' of {snapshots.table_path} was committed at or before "
            f"{ts} (epoch ms, {local_datetime(ts)} local): the branch had no data yet. Pick a later time."
        )
    return max(candidates, key=lambda s: (s.time_millis, s.id))


def check_timestamp_rule(rule: str) -> None:
    if rule not in TIMESTAMP_RULES:
        raise OptionError(
            f"timestamp_rule must be one of {list(TIMESTAMP_RULES)}, got {rule!r}: "
            f"'{AT_OR_AFTER}' is Paimon's create_tag_from_timestamp (the first snapshot committed at or "
            f"after the instant), '{AT_OR_BEFORE}' the table as it was at the instant (Databend, Iceberg)."
        )


def snapshot_as_of(snapshots: SnapshotManager, tags: TagManager, ts: int, rule: TimestampRule) -> Snapshot:
    """The snapshot a ref made "as of" ``ts`` points at, by ``rule`` (one of :data:`TIMESTAMP_RULES`)."""
    check_timestamp_rule(rule)
    if rule == AT_OR_AFTER:
        return first_snapshot_at_or_after(snapshots, tags, ts)
    return last_snapshot_at_or_before(snapshots, tags, ts)


def resolve_source(
    store: FileStore,
    *,
    snapshot_id: int | None = None,
    from_tag: str | None = None,
    from_timestamp: object | None = None,
    timestamp_rule: TimestampRule = AT_OR_BEFORE,
) -> Snapshot:
    """The snapshot a new tag should point at: an explicit snapshot id, another tag, the snapshot a timestamp
    selects by ``timestamp_rule``, or (none given) the latest snapshot."""
    given = [x for x in (snapshot_id, from_tag, from_timestamp) if x is not None]
    if len(given) > 1:
        raise TagError("Pass at most one of snapshot_id, from_tag and from_timestamp.")
    check_timestamp_rule(timestamp_rule)
    require_branch_exists(store.fileio, store.table_path, store.branch)
    snapshots = store.snapshots
    tags = TagManager(store)
    if snapshot_id is not None:
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
            raise TagError(f"snapshot_id must be an int, got {snapshot_id!r}.")
        return find_snapshot(snapshots, tags, snapshot_id)
    if from_tag is not None:
        return tags.get(from_tag)
    if from_timestamp is not None:
        return snapshot_as_of(snapshots, tags, to_millis(from_timestamp, "from_timestamp"), timestamp_rule)
    latest = snapshots.latest()
    if latest is None:
        raise TagError(f"Branch '{store.branch}' of {store.table_path} has no snapshot to tag yet; commit data first.")
    return latest


def consumer_snapshot(store: FileStore, consumer_id: str) -> Snapshot:
    """The snapshot a consumer of the branch has read up to (Databend's ``AT (STREAM => s)``): the last one it
    fully consumed, ``nextSnapshot - 1``, so a ref made there holds exactly what the stream has delivered and
    the stream's next batch is what the ref lacks. Unknown consumers, a consumer that has read nothing yet and
    a position that expired (and no tag kept it) are refused, naming what exists."""
    require_branch_exists(store.fileio, store.table_path, store.branch)
    known = ConsumerManager(store).consumers()
    if consumer_id not in known:
        listed = ", ".join(sorted(known)) or "none"
        raise SnapshotNotFoundError(
            f"Branch '{store.branch}' of {store.table_path} has no consumer '{consumer_id}' (its consumers: "
            f"{listed}). A consumer appears once a stream with read option consumer-id = '{consumer_id}' has "
            "committed a batch."
        )
    position = known[consumer_id] - 1
    if position < 1:
        raise SnapshotNotFoundError(
            f"Consumer '{consumer_id}' of branch '{store.branch}' has consumed no snapshot yet (nextSnapshot = "
            f"{known[consumer_id]}); there is nothing to make a ref at. Let the stream run a batch first."
        )
    snapshots = store.snapshots
    try:
        return find_snapshot(snapshots, TagManager(store), position)
    except SnapshotNotFoundError:
        raise SnapshotNotFoundError(
            f"Consumer '{consumer_id}' of branch '{store.branch}' last consumed snapshot {position}, which has "
            f"expired (earliest kept: {snapshots.earliest_id()}) and no tag preserved it: the consumer is "
            "behind expiration. Make the ref at a retained snapshot instead."
        ) from None


def offset_instant(offset: object, now: int | None = None) -> int:
    """Epoch ms of a relative ``offset`` (``'-1 d'``, a negative timedelta or ms) from ``now``."""
    return (now_millis() if now is None else now) + offset_millis(offset, "offset")


def snapshot_at_offset(
    store: FileStore, offset: object, rule: TimestampRule = AT_OR_BEFORE, now: int | None = None
) -> Snapshot:
    """The snapshot ``offset`` ago selects, by default the last committed at or before that instant (the
    table as it was then, Databend's ``AT (OFFSET => ...)``). An offset reaching before the branch's first
    snapshot is refused, naming when the first retained snapshot was committed."""
    ts = offset_instant(offset, now)
    require_branch_exists(store.fileio, store.table_path, store.branch)
    snapshots = store.snapshots
    tags = TagManager(store)
    try:
        return snapshot_as_of(snapshots, tags, ts, rule)
    except SnapshotNotFoundError:
        earliest = snapshots.earliest_id()
        if earliest is None:
            first = "it has no snapshot yet"
        else:
            when = local_datetime(find_snapshot(snapshots, tags, earliest).time_millis)
            first = f"its first retained snapshot, {earliest}, was committed at {when} local"
        raise SnapshotNotFoundError(
            f"Offset {offset!r} reaches {local_datetime(ts)} local, before branch '{store.branch}' of "
            f"{store.table_path} had data ({first}). Use a shorter offset."
        ) from None


def retention_ms(time_retained: object | None, options: Mapping[str, str] | None) -> int | None:
    """An explicit retention, else the table's ``tag.default-time-retained`` (Java applies it to every tag
    created without one), else none."""
    if time_retained is not None:
        return duration_millis(time_retained, "time_retained")
    return CoreOptions(options or {}).get(TAG_DEFAULT_TIME_RETAINED)


def create_tag(
    store: FileStore,
    name: str,
    *,
    snapshot_id: int | None = None,
    from_tag: str | None = None,
    from_timestamp: object | None = None,
    time_retained: object | None = None,
    ignore_if_exists: bool = False,
    options: Mapping[str, str] | None = None,
    timestamp_rule: TimestampRule = AT_OR_BEFORE,
) -> Tag:
    validate_tag_name(name)
    tags = TagManager(store)
    if ignore_if_exists and tags.exists(name):
        return tags.get_tag(name)
    snapshot = resolve_source(
        store,
        snapshot_id=snapshot_id,
        from_tag=from_tag,
        from_timestamp=from_timestamp,
        timestamp_rule=timestamp_rule,
    )
    try:
        tag = tags.create(name, snapshot, retention_ms(time_retained, options))
    except TagError:
        if ignore_if_exists and tags.exists(name):  # created by someone else meanwhile
            return tags.get_tag(name)
        raise
    _check_still_preserved(store.snapshots, tags, tag, undo=tags.delete)
    return tag


def _check_still_preserved(
    snapshots: SnapshotManager, tags: TagManager, tag: Tag, undo: Callable[[str], object]
) -> None:
    """Close the tag/expiration race (Paimon's apache/paimon#9220): a tag written after an expiration read its
    list of tags, for a snapshot that expiration then removed, would point at deleted files.

    Expiration deletes the expired snapshot files before it re-lists the tags and protects every root it had
    not seen (``maintenance.deletion.sweep``). So once the tag file exists, one look decides: if the snapshot
    file (or another tag holding the same snapshot) is still there, any expiration of it has not reached its
    re-list yet and will see this tag; if neither is there, this tag may already be unprotected, so it is
    removed again (``undo``: deleted, or a replaced tag restored) and the caller is told to pick a newer
    snapshot."""
    sid = tag.snapshot.id
    if snapshots.exists(sid) or any(t.snapshot.id == sid and t.name != tag.name for t in tags.list_tags()):
        return
    undo(tag.name)
    raise TagError(
        f"Tag '{tag.name}' was not created: snapshot {sid} of branch '{tags.branch}' expired while the tag was "
        "being written, so its files may already be deleted. Tag a snapshot that is still retained (see "
        "Table.snapshots()), or tag it before expiring."
    )


def replace_tag(
    store: FileStore,
    name: str,
    *,
    snapshot_id: int | None = None,
    from_tag: str | None = None,
    from_timestamp: object | None = None,
    time_retained: object | None = None,
    options: Mapping[str, str] | None = None,
    timestamp_rule: TimestampRule = AT_OR_BEFORE,
) -> Tag:
    tags = TagManager(store)
    snapshot = resolve_source(
        store,
        snapshot_id=snapshot_id,
        from_tag=from_tag,
        from_timestamp=from_timestamp,
        timestamp_rule=timestamp_rule,
    )
    previous = tags.get_tag(name) if tags.exists(name) else None
    tag = tags.replace(name, snapshot, retention_ms(time_retained, options))
    if previous is not None:
        _check_still_preserved(store.snapshots, tags, tag, undo=lambda _name: tags.write(previous))
    return tag


__all__ = [
    "Tag",
    "TagManager",
    "validate_tag_name",
    "tag_to_json",
    "tag_from_json",
    "create_tag",
    "replace_tag",
    "resolve_source",
    "find_snapshot",
    "first_snapshot_at_or_after",
    "last_snapshot_at_or_before",
    "snapshot_as_of",
    "check_timestamp_rule",
    "retention_ms",
    "consumer_snapshot",
    "offset_instant",
    "snapshot_at_offset",
    "AT_OR_AFTER",
    "AT_OR_BEFORE",
    "TIMESTAMP_RULES",
    "TimestampRule",
]
