"""The fault harness's checker: what a table directory references and what it holds besides, read with ``os``,
``json`` and ``fastavro`` only, never through the engine, so an engine bug cannot hide itself from the check.

:func:`inspect_table` walks every root (``snapshot-N``, ``tag-*`` and long-lived ``changelog-N`` of the main
branch and every ``branch/branch-*``), follows its manifest lists (base + delta folded into the live data files
by the format's rule, the changelog list), its index manifest (deletion vectors, hash index) and its statistics
file, and reports

* ``missing``: every referenced file that is not there (a schema, a manifest list, a manifest, a data,
  changelog or index file), and metadata that cannot be read;
* ``leftovers``: every file that nothing references and that is not table metadata (temp files, unreferenced
  manifests, data and index files, a branch directory without a schema, snapshot ids with a gap: a snapshot past
  a gap is a stray head a later commit would jump to).

Data files are found by name (names carry a UUID) in the bucket directory of their bucket, wherever their
partition directory is, so no partition value needs decoding.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import threading
from dataclasses import dataclass, field
from typing import Any

import fastavro

_SNAPSHOT = re.compile(r"^snapshot-(\d+)$")
_CHANGELOG = re.compile(r"^changelog-(\d+)$")
_HINTS = ("LATEST", "EARLIEST")
_PER_BRANCH_DIRS = ("snapshot", "schema", "tag", "changelog", "consumer")
_BRANCH_FILES = ("branch.json", "merge-bases.json")

# Parsed Avro files by content digest (trial directories are hard-link clones, so a manifest shared with the setup
# is parsed once for all trials; inode numbers are reused once a trial directory is removed, so they cannot key it).
_AVRO_CACHE: dict[bytes, list[dict[str, Any]]] = {}
_AVRO_LOCK = threading.Lock()


def _records(path: str) -> list[dict[str, Any]]:
    with open(path, "rb") as f:
        data = f.read()
    key = hashlib.blake2b(data, digest_size=20).digest()
    with _AVRO_LOCK:
        cached = _AVRO_CACHE.get(key)
    if cached is None:
        cached = list(fastavro.reader(io.BytesIO(data)))
        with _AVRO_LOCK:
            if len(_AVRO_CACHE) > 20_000:
                _AVRO_CACHE.clear()
            _AVRO_CACHE[key] = cached
    return cached


@dataclass
class TableReport:
    """What :func:`inspect_table` found in one table directory."""

    referenced: set[str] = field(default_factory=set)  # local paths of every referenced file that exists
    missing: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    roots: int = 0


def _bucket_dir(bucket: int) -> str:
    return "bucket-postpone" if bucket == -2 else f"bucket-{bucket}"


def _is_data_dir(rel_parts: list[str]) -> bool:
    """``k=v/.../bucket-N``: the directories holding data and changelog files."""
    return bool(rel_parts) and rel_parts[-1].startswith("bucket-") and all("=" in p for p in rel_parts[:-1])


class _Walk:
    def __init__(self, table_dir: str):
        self.table = table_dir.rstrip("/")
        self.report = TableReport()
        # data file name -> local paths, from the bucket directories
        self.data_files: dict[str, list[str]] = {}
        self.all_files: list[str] = []
        for directory, _dirs, files in os.walk(self.table):
            rel = os.path.relpath(directory, self.table)
            parts = [] if rel == "." else rel.split(os.sep)
            for name in files:
                path = os.path.join(directory, name)
                self.all_files.append(path)
                if _is_data_dir(parts):
                    self.data_files.setdefault(name, []).append(path)

    def _need(self, path: str, what: str) -> bool:
        if os.path.isfile(path):
            self.report.referenced.add(path)
            return True
        self.report.missing.append(f"{what}: {os.path.relpath(path, self.table)}")
        return False

    def _data(self, name: str, bucket: int, what: str, external: str | None = None) -> None:
        if external:
            local = "/" + external.split("://", 1)[-1].lstrip("/")
            self._need(local, what)
            return
        found = [
            p for p in self.data_files.get(name, []) if os.path.basename(os.path.dirname(p)) == _bucket_dir(bucket)
        ]
        if found:
            self.report.referenced.update(found)
        else:
            self.report.missing.append(f"{what}: {name} (bucket {bucket})")

    def _manifests(self, list_name: str, what: str) -> list[list[dict[str, Any]]]:
        list_path = f"{self.table}/manifest/{list_name}"
        if not self._need(list_path, f"{what} manifest list"):
            return []
        out = []
        for meta in _records(list_path):
            path = f"{self.table}/manifest/{meta['_FILE_NAME']}"
            if self._need(path, f"{what} manifest (from {list_name})"):
                out.append(_records(path))
        return out

    def root(self, branch_dir: str, kind: str, path: str) -> None:
        label = f"{os.path.relpath(path, self.table)}"
        try:
            with open(path, encoding="utf-8") as f:
                snap = json.load(f)
        except (OSError, ValueError) as e:
            self.report.missing.append(f"unreadable {label}: {e}")
            return
        self.report.roots += 1
        self._need(f"{branch_dir}/schema/schema-{snap['schemaId']}", f"schema of {label}")
        live: dict[tuple, dict[str, Any]] = {}
        for list_key in ("baseManifestList", "deltaManifestList"):
            for entries in self._manifests(snap[list_key], f"{label} {list_key}"):
                for e in entries:
                    file = e["_FILE"]
                    ident = (
                        e["_PARTITION"],
                        e["_BUCKET"],
                        file["_LEVEL"],
                        file["_FILE_NAME"],
                        tuple(file.get("_EXTRA_FILES") or ()),
                        file.get("_EMBEDDED_FILE_INDEX"),
                        file.get("_EXTERNAL_PATH"),
                    )
                    if e["_KIND"] == 0:
                        live[ident] = e
                    else:
                        live.pop(ident, None)
        for e in live.values():
            file = e["_FILE"]
            self._data(file["_FILE_NAME"], e["_BUCKET"], f"data file of {label}", file.get("_EXTERNAL_PATH"))
            for extra in file.get("_EXTRA_FILES") or ():
                self._data(extra, e["_BUCKET"], f"extra file of {label}")
        if snap.get("changelogManifestList"):
            for entries in self._manifests(snap["changelogManifestList"], f"{label} changelog"):
                for e in entries:
                    file = e["_FILE"]
                    self._data(
                        file["_FILE_NAME"], e["_BUCKET"], f"changelog file of {label}", file.get("_EXTERNAL_PATH")
                    )
        if snap.get("indexManifest"):
            index_manifest = f"{self.table}/manifest/{snap['indexManifest']}"
            if self._need(index_manifest, f"index manifest of {label}"):
                index_live: dict[str, dict[str, Any]] = {}
                for e in _records(index_manifest):
                    if e["_KIND"] == 0:
                        index_live[e["_FILE_NAME"]] = e
                    else:
                        index_live.pop(e["_FILE_NAME"], None)
                for name, e in index_live.items():
                    if e.get("_EXTERNAL_PATH"):
                        self._data(name, e["_BUCKET"], f"index file of {label}", e["_EXTERNAL_PATH"])
                    elif os.path.isfile(f"{self.table}/index/{name}"):
                        self.report.referenced.add(f"{self.table}/index/{name}")
                    else:
                        self._data(name, e["_BUCKET"], f"index file of {label}")
        if snap.get("statistics"):
            self._need(f"{self.table}/statistics/{snap['statistics']}", f"statistics of {label}")

    def branch(self, branch_dir: str) -> None:
        ids = []
        for name in _names(f"{branch_dir}/snapshot"):
            m = _SNAPSHOT.match(name)
            if m:
                ids.append(int(m.group(1)))
                self.root(branch_dir, "snapshot", f"{branch_dir}/snapshot/{name}")
        ids.sort()
        if ids and ids != list(range(ids[0], ids[-1] + 1)):
            gaps = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids))
            self.report.leftovers.append(
                f"snapshot ids of {os.path.relpath(branch_dir, self.table) or 'main'} have gaps {gaps}: {ids}"
            )
        for name in _names(f"{branch_dir}/tag"):
            if name.startswith("tag-"):
                self.root(branch_dir, "tag", f"{branch_dir}/tag/{name}")
        for name in _names(f"{branch_dir}/changelog"):
            if _CHANGELOG.match(name):
                self.root(branch_dir, "changelog", f"{branch_dir}/changelog/{name}")

    def metadata_ok(self, sub: list[str], in_branch: bool) -> bool:
        """Whether a file at ``sub`` (relative to a branch root) is table metadata a table keeps by design."""
        if len(sub) == 1:
            return in_branch and sub[0] in _BRANCH_FILES
        if len(sub) != 2:
            return False
        directory, name = sub
        if directory == "snapshot":
            return bool(_SNAPSHOT.match(name)) or name in _HINTS
        if directory == "schema":
            return bool(re.match(r"^schema-\d+$", name))
        if directory == "tag":
            return name.startswith("tag-")
        if directory == "changelog":
            return bool(_CHANGELOG.match(name)) or name in _HINTS
        if directory == "consumer":
            return name.startswith("consumer-")
        return False

    def classify(self) -> None:
        for path in self.all_files:
            if path in self.report.referenced:
                continue
            parts = os.path.relpath(path, self.table).split(os.sep)
            if parts[0] == "branch":
                if len(parts) >= 3 and parts[1].startswith("branch-"):
                    branch_dir = f"{self.table}/branch/{parts[1]}"
                    if _names(f"{branch_dir}/schema") and self.metadata_ok(parts[2:], in_branch=True):
                        continue
                self.report.leftovers.append(f"{'/'.join(parts)}")
                continue
            if parts[0] in _PER_BRANCH_DIRS and self.metadata_ok(parts, in_branch=False):
                continue
            self.report.leftovers.append("/".join(parts))


def _names(directory: str) -> list[str]:
    try:
        return sorted(os.listdir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []


def inspect_table(table_dir: str) -> TableReport:
    """Check one table directory (see the module docstring)."""
    walk = _Walk(table_dir)
    walk.branch(walk.table)
    for name in _names(f"{walk.table}/branch"):
        if name.startswith("branch-"):
            walk.branch(f"{walk.table}/branch/{name}")
    walk.classify()
    walk.report.missing = sorted(set(walk.report.missing))
    return walk.report


__all__ = ["TableReport", "inspect_table"]
