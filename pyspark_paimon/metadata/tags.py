"""Tags (``tag/tag-<name>``): named, long-lived snapshots (§3.2, §9.1).

A tag file is the tagged snapshot's JSON, plus ``tagCreateTime`` and ``tagTimeRetained`` when the tag has a
retention. Because a tag keeps the snapshot's id and manifest lists, everything it references stays alive
as long as the tag exists, even after the snapshot itself expires.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from typing import Any

from pyspark_paimon.errors import CorruptMetadataError, TagError, TagNotFoundError
from pyspark_paimon.metadata.fileio import FileIO
from pyspark_paimon.metadata.snapshot import MAIN_BRANCH, Snapshot, branch_path

TAG_PREFIX = "tag-"
CREATE_TIME_KEY = "tagCreateTime"
TIME_RETAINED_KEY = "tagTimeRetained"


@dataclass(frozen=True)
class Tag:
    name: str
    snapshot: Snapshot
    create_time: _dt.datetime | None = None  # local wall clock, as Java's LocalDateTime
    time_retained_ms: int | None = None

    def expired(self, now: _dt.datetime) -> bool:
        if self.create_time is None or self.time_retained_ms is None:
            return False
        return now > self.create_time + _dt.timedelta(milliseconds=self.time_retained_ms)


def validate_tag_name(name: str) -> None:
    """Not blank, and not purely numeric so ``scan.version`` is never ambiguous with a snapshot id."""
    if name is None or not str(name).strip():
        raise TagError("Tag name must not be blank.")
    if str(name).isdigit():
        raise TagError(f"Tag name '{name}' is purely numeric; it would be ambiguous with snapshot ids. "
                       "Use a name with a letter in it, e.g. 'v{name}'.")
    if "/" in name:
        raise TagError(f"Tag name '{name}' must not contain '/'.")


def _local_datetime_to_json(dt: _dt.datetime) -> list[int]:
    return [dt.year, dt.month, dt.day, dt.hour, dt.minute, dt.second, dt.microsecond * 1000]


def _local_datetime_from_json(value: Any) -> _dt.datetime | None:
    if value is None:
        return None
    if isinstance(value, list) and 5 <= len(value) <= 7:
        parts = list(value) + [0] * (7 - len(value))
        return _dt.datetime(parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], parts[6] // 1000)
    if isinstance(value, str):
        return _dt.datetime.fromisoformat(value)
    raise CorruptMetadataError(f"Cannot parse tag create time {value!r}.")


def _duration_to_json(ms: int) -> str:
    return f"{ms // 1000}.{(ms % 1000) * 1_000_000:09d}"


def _duration_from_json(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return int(round(float(value) * 1000))
    if isinstance(value, str):
        from pyspark_paimon.metadata.options import parse_duration_ms  # noqa: PLC0415

        try:
            return int(round(float(value) * 1000))
        except ValueError:
            return parse_duration_ms(value, "tagTimeRetained")
    raise CorruptMetadataError(f"Cannot parse tag retention {value!r}.")


def tag_to_json(tag: Tag) -> str:
    d = tag.snapshot.to_dict()
    if tag.time_retained_ms is not None:
        d[CREATE_TIME_KEY] = _local_datetime_to_json(tag.create_time or _dt.datetime.now())
        d[TIME_RETAINED_KEY] = _duration_to_json(tag.time_retained_ms)
    text = json.dumps(d, indent=2, separators=(",", " : "))
    # Java writes the Duration as a bare decimal number, not a string.
    if tag.time_retained_ms is not None:
        text = text.replace(f'"{_duration_to_json(tag.time_retained_ms)}"', _duration_to_json(tag.time_retained_ms))
    return text


def tag_from_json(name: str, text: str, source: str) -> Tag:
    try:
        d = json.loads(text)
    except json.JSONDecodeError as e:
        raise CorruptMetadataError(f"Tag file {source} is not valid JSON ({e}); restore or delete the tag.") from e
    create = d.pop(CREATE_TIME_KEY, None)
    retained = d.pop(TIME_RETAINED_KEY, None)
    return Tag(name, Snapshot.from_dict(d, source), _local_datetime_from_json(create),
               _duration_from_json(retained))


class TagManager:
    """The tags of one branch."""

    def __init__(self, fileio: FileIO, table_path: str, branch: str = MAIN_BRANCH):
        self.fileio = fileio
        self.table_path = table_path
        self.branch = branch or MAIN_BRANCH
        self.tag_dir = f"{branch_path(table_path, self.branch)}/tag"

    def tag_path(self, name: str) -> str:
        return f"{self.tag_dir}/{TAG_PREFIX}{name}"

    def exists(self, name: str) -> bool:
        return self.fileio.exists(self.tag_path(name))

    def list_names(self) -> list[str]:
        return sorted(n[len(TAG_PREFIX):] for n in self.fileio.list_names(self.tag_dir) if n.startswith(TAG_PREFIX))

    def get_tag(self, name: str) -> Tag:
        path = self.tag_path(name)
        try:
            text = self.fileio.read_text(path)
        except FileNotFoundError:
            raise TagNotFoundError(
                f"Tag '{name}' does not exist on branch '{self.branch}' of {self.table_path}. "
                f"Existing tags: {self.list_names() or 'none'}.") from None
        return tag_from_json(name, text, path)

    def get(self, name: str) -> Snapshot:
        return self.get_tag(name).snapshot

    def list(self) -> list[Tag]:
        """All tags, ordered by snapshot id then name."""
        tags = [self.get_tag(n) for n in self.list_names()]
        return sorted(tags, key=lambda t: (t.snapshot.id, t.name))

    def write(self, tag: Tag) -> None:
        self.fileio.write_bytes(self.tag_path(tag.name), tag_to_json(tag).encode("utf-8"))

    def create(self, name: str, snapshot: Snapshot, time_retained_ms: int | None = None,
               ignore_if_exists: bool = False) -> Tag:
        validate_tag_name(name)
        if self.exists(name):
            if ignore_if_exists:
                return self.get_tag(name)
            raise TagError(f"Tag '{name}' already exists on branch '{self.branch}'; use replace_tag to move it.")
        tag = Tag(name, snapshot, _dt.datetime.now() if time_retained_ms is not None else None, time_retained_ms)
        self.write(tag)
        return tag

    def delete(self, name: str) -> None:
        if not self.fileio.delete(self.tag_path(name)):
            raise TagNotFoundError(f"Tag '{name}' does not exist on branch '{self.branch}' of {self.table_path}.")
