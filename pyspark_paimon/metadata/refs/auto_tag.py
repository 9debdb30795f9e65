"""Automatic tag creation after a commit (``tag.automatic-creation``), as Paimon does it.

Options (all table options):

* ``tag.automatic-creation``: ``none`` (default), ``process-time``, ``watermark`` or ``batch``;
* ``tag.creation-period``: ``daily`` (default), ``hourly`` or ``two-hours``; or ``tag.creation-period-duration``
  (any duration, tags named ``yyyyMMddHHmm``);
* ``tag.period-formatter``: ``with_dashes`` (default: ``yyyy-MM-dd`` / ``yyyy-MM-dd HH``), ``without_dashes``
  (``yyyyMMdd`` / ``yyyyMMdd HH``) or ``without_dashes_and_spaces`` (``yyyyMMdd`` / ``yyyyMMddHH``);
* ``tag.creation-delay`` (default 0, must be shorter than the period);
* ``tag.num-retained-max``: keep at most this many *auto-created* tags (recognised by their name parsing with
  the period formatter; tags users named differently are never touched);
* ``tag.default-time-retained``: the retention written into each auto-created tag;
* ``tag.automatic-completion``: also create tags for periods without a commit (one per processed snapshot);
* ``tag.batch.customized-name``: fixed tag name for ``batch`` mode.

**process-time / watermark** (Java ``TagAutoCreation``): the time of a snapshot is its commit time in the
wall-clock time of ``sink.process-time-zone`` (default: the local zone), or its watermark, read in
``sink.watermark-time-zone`` (default UTC). A tag for period P is
created when a snapshot's time minus the delay reaches the end of P; it is named after P and points at that
first snapshot of the next period. With no auto tag yet, the first processed snapshot creates the tag of the
period *before* its own. Like Java, we walk every snapshot committed since the last auto tag (not only the
one just committed), so commits by other engines are accounted for.

**batch** (Java's ``TagBatchCreation``): after every successful commit, the tag ``batch-write-<yyyy-MM-dd>`` of
the commit's date in ``sink.process-time-zone`` (default: local; or ``tag.batch.customized-name``) is created,
or moved to the new snapshot if it exists, so each day's tag holds the state at the end of its last batch
write. Unlike Java, ``tag.num-retained-max`` only ever removes auto-created tags, never a tag a user created
by hand.

Auto tags are created on the committing branch. A failure here never fails the commit (which has already
landed): it is logged, and the next commit retries. Tags are not expired by time on commit (Java does when
``tag.time-expire-enabled``): that is an explicit ``expire_tags`` call.
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
from dataclasses import dataclass
from typing import Any, Mapping
from zoneinfo import ZoneInfo

from pyspark_paimon.errors import OptionError
from pyspark_paimon.metadata.refs.tags import Tag, TagManager, retention_ms
from pyspark_paimon.metadata.schema.options import (
    SINK_PROCESS_TIME_ZONE,
    SINK_WATERMARK_TIME_ZONE,
    TAG_AUTOMATIC_COMPLETION,
    TAG_AUTOMATIC_CREATION,
    TAG_BATCH_CUSTOMIZED_NAME,
    TAG_CREATION_DELAY,
    TAG_CREATION_PERIOD,
    TAG_CREATION_PERIOD_DURATION,
    TAG_CREATION_PERIODS,
    TAG_NUM_RETAINED_MAX,
    TAG_PERIOD_FORMATTER,
    ConfigOption,
    CoreOptions,
)
from pyspark_paimon.metadata.snapshots.snapshot import Snapshot
from pyspark_paimon.metadata.store import FileStore

log = logging.getLogger(__name__)

BATCH_TAG_PREFIX = "batch-write-"
#: Length in ms of each ``tag.creation-period`` (daily, hourly, two-hours).
PERIODS = dict(zip(TAG_CREATION_PERIODS, (86_400_000, 3_600_000, 7_200_000)))
_EPOCH = _dt.datetime(1970, 1, 1)
_LONG_MIN = -(2**63)

# (regex, strftime) per (period kind, formatter)
_DAY = {
    "with_dashes": (r"(\d{4})-(\d{2})-(\d{2})", "%Y-%m-%d"),
    "without_dashes": (r"(\d{4})(\d{2})(\d{2})", "%Y%m%d"),
    "without_dashes_and_spaces": (r"(\d{4})(\d{2})(\d{2})", "%Y%m%d"),
}
_HOUR = {
    "with_dashes": (r"(\d{4})-(\d{2})-(\d{2}) (\d{2})", "%Y-%m-%d %H"),
    "without_dashes": (r"(\d{4})(\d{2})(\d{2}) (\d{2})", "%Y%m%d %H"),
    "without_dashes_and_spaces": (r"(\d{4})(\d{2})(\d{2})(\d{2})", "%Y%m%d%H"),
}
_MINUTE = (r"(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})", "%Y%m%d%H%M")


@dataclass(frozen=True)
class PeriodHandler:
    """Maps times to tag names and back for one period length and name format."""

    period_ms: int
    pattern: str
    strftime: str
    daily: bool = False

    @property
    def period(self) -> _dt.timedelta:
        return _dt.timedelta(milliseconds=self.period_ms)

    def time_to_tag(self, t: _dt.datetime) -> str:
        return t.strftime(self.strftime)

    def tag_to_time(self, name: str) -> _dt.datetime | None:
        """The period start a tag name denotes, or None if it is not an auto-tag name."""
        text = name.split(" ")[0] if self.daily else name  # Java's daily parser ignores an hour suffix
        m = re.fullmatch(self.pattern, text)
        if not m:
            return None
        year, month, day, hour, minute = ([int(g) for g in m.groups()] + [0, 0])[:5]
        try:
            return _dt.datetime(year, month, day, hour, minute)
        except ValueError:
            return None

    def is_auto_tag(self, name: str) -> bool:
        return self.tag_to_time(name) is not None

    def normalize_to_previous(self, t: _dt.datetime) -> _dt.datetime:
        """Start of the period before the one containing ``t`` (periods aligned on the local-time epoch)."""
        ms = (t - _EPOCH) // _dt.timedelta(milliseconds=1)
        return _EPOCH + _dt.timedelta(milliseconds=(ms // self.period_ms) * self.period_ms) - self.period

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> "PeriodHandler":
        opts = CoreOptions(options)
        formatter = opts.get(TAG_PERIOD_FORMATTER)
        duration_ms = opts.get(TAG_CREATION_PERIOD_DURATION)
        if duration_ms is not None:
            return cls(duration_ms, *_MINUTE)
        period = opts.get(TAG_CREATION_PERIOD)
        if period == "daily":
            return cls(PERIODS[period], *_DAY[formatter], daily=True)
        return cls(PERIODS[period], *_HOUR[formatter])


def mode_of(options: Mapping[str, str]) -> str:
    return CoreOptions(options).get(TAG_AUTOMATIC_CREATION)


def validate_options(options: Mapping[str, str]) -> None:
    """Raise :class:`OptionError` for invalid auto-tag options; called before a commit writes anything."""
    if mode_of(options) == "none":
        return
    handler = PeriodHandler.from_options(options)
    opts = CoreOptions(options)
    delay = opts.get(TAG_CREATION_DELAY)
    if delay >= handler.period_ms:
        raise OptionError(
            f"Option '{TAG_CREATION_DELAY.key}' ({delay} ms) must be shorter than the tag period "
            f"({handler.period_ms} ms)."
        )
    opts.get(TAG_NUM_RETAINED_MAX)  # refuses a negative or non-integer value before the commit writes anything
    retention_ms(None, options)  # parses tag.default-time-retained
    _zone(options, SINK_WATERMARK_TIME_ZONE if mode_of(options) == "watermark" else SINK_PROCESS_TIME_ZONE)


def _zone(options: Mapping[str, str], option: ConfigOption[Any]) -> _dt.tzinfo | None:
    """The time zone a zone option names; None (= the local zone) when it is unset."""
    zone = CoreOptions(options).text(option) or option.default
    if zone is None:
        return None
    try:
        return _dt.timezone.utc if zone.strip().upper() == "UTC" else ZoneInfo(zone.strip())
    except Exception as e:  # noqa: BLE001 - ZoneInfo raises several unrelated types for a bad name
        raise OptionError(
            f"Option '{option.key}' = '{zone}' is not a known time zone; use a name such as 'UTC' or 'Asia/Shanghai'."
        ) from e


def _wall_clock(millis: int, zone: _dt.tzinfo | None) -> _dt.datetime:
    """Epoch ``millis`` as a naive wall-clock time of ``zone`` (None = local), as Java's ``LocalDateTime``."""
    if zone is None:
        return _dt.datetime.fromtimestamp(millis / 1000.0)
    return _dt.datetime.fromtimestamp(millis / 1000.0, zone).replace(tzinfo=None)


def _time_of(snapshot: Snapshot, mode: str, options: Mapping[str, str]) -> _dt.datetime | None:
    if mode == "watermark":
        wm = snapshot.watermark
        if wm is None or wm == _LONG_MIN:
            return None
        return _wall_clock(wm, _zone(options, SINK_WATERMARK_TIME_ZONE))
    return _wall_clock(snapshot.time_millis, _zone(options, SINK_PROCESS_TIME_ZONE))


def on_commit(store: FileStore, snapshot: Snapshot, options: Mapping[str, str]) -> list[str]:
    """Create the auto tags due after ``snapshot`` was committed; returns their names."""
    mode = mode_of(options)
    if mode == "none":
        return []
    handler = PeriodHandler.from_options(options)
    tags = TagManager(store)
    retained = retention_ms(None, options)
    if mode == "batch":
        created = [_batch_tag(tags, handler, snapshot, options, retained)]
    else:
        created = _time_tags(store, tags, handler, snapshot, mode, options, retained)
    _enforce_max(tags, handler, options)
    return created


def _batch_tag(
    tags: TagManager, handler: PeriodHandler, snapshot: Snapshot, options: Mapping[str, str], retained: int | None
) -> str:
    name = CoreOptions(options).get(TAG_BATCH_CUSTOMIZED_NAME) or BATCH_TAG_PREFIX + _wall_clock(
        snapshot.time_millis, _zone(options, SINK_PROCESS_TIME_ZONE)
    ).strftime("%Y-%m-%d")
    if tags.create(name, snapshot, retained, ignore_if_exists=True, validate=False).snapshot.id != snapshot.id:
        # The period's tag exists from an earlier batch: move it (an atomic overwrite, never absent).
        tags.write(Tag(name, snapshot, _dt.datetime.now() if retained is not None else None, retained))
    return name


def _time_tags(
    store: FileStore,
    tags: TagManager,
    handler: PeriodHandler,
    snapshot: Snapshot,
    mode: str,
    options: Mapping[str, str],
    retained: int | None,
) -> list[str]:
    opts = CoreOptions(options)
    delay = _dt.timedelta(milliseconds=opts.get(TAG_CREATION_DELAY))
    completion = opts.get(TAG_AUTOMATIC_COMPLETION)
    snapshots = store.snapshots
    auto = [t for t in tags.list_tags() if handler.is_auto_tag(t.name)]  # ordered by snapshot id
    next_tag: _dt.datetime | None = None
    if auto:
        last = auto[-1]
        last_time = handler.tag_to_time(last.name)
        assert last_time is not None  # is_auto_tag: the name parses
        next_tag = last_time + handler.period
        start = last.snapshot.id + 1
        # Snapshot times only grow: if the newest cannot trigger a tag, no snapshot before it can.
        t = _time_of(snapshot, mode, options)
        if t is None or t - delay < next_tag + handler.period:
            return []
    else:
        start = snapshots.earliest_id() or snapshot.id
    created = []
    for sid in range(max(start, 1), snapshot.id + 1):
        if sid == snapshot.id:
            s = snapshot
        elif snapshots.exists(sid):
            s = snapshots.snapshot(sid)
        else:
            continue
        t = _time_of(s, mode, options)
        if t is None:
            continue
        if next_tag is None or t - delay >= next_tag + handler.period:
            this_tag = handler.normalize_to_previous(t)
            if completion and next_tag is not None:
                this_tag = next_tag
            name = handler.time_to_tag(this_tag)
            if not tags.exists(name):
                tags.create(name, s, retained, ignore_if_exists=True, validate=False)
                created.append(name)
            next_tag = this_tag + handler.period
    return created


def _is_batch_tag(name: str) -> bool:
    if not name.startswith(BATCH_TAG_PREFIX):
        return False
    try:
        _dt.datetime.strptime(name[len(BATCH_TAG_PREFIX) :], "%Y-%m-%d")
    except ValueError:
        return False
    return True


def _enforce_max(tags: TagManager, handler: PeriodHandler, options: Mapping[str, str]) -> None:
    max_n = CoreOptions(options).get(TAG_NUM_RETAINED_MAX)
    if max_n is None:
        return
    is_auto = _is_batch_tag if mode_of(options) == "batch" else handler.is_auto_tag
    auto = [t for t in tags.list_tags() if is_auto(t.name)]  # oldest (lowest snapshot id) first
    excess = len(auto) - max_n
    for t in auto[: max(excess, 0)]:
        tags.delete(t.name, ignore_if_not_exists=True)
        log.info("deleted auto tag %s: more than %s = %s auto tags", t.name, TAG_NUM_RETAINED_MAX.key, max_n)


__all__ = ["PeriodHandler", "on_commit", "validate_options", "mode_of"]
