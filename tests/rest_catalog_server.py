"""An in-suite Paimon REST catalog server, written from the published OpenAPI spec
(apache/paimon ``docs/static/rest-catalog-open-api.yaml``), for the REST catalog tests.

No Paimon REST server installs here, so the tests run this one: a standard-library ``ThreadingHTTPServer`` on
127.0.0.1 (an ephemeral port), started and stopped by a fixture. It keeps the catalog (databases, tables and
their ids) in memory and each table's files under a warehouse root (a local directory, or ``s3://...`` with the
server's own storage options), laid out as a filesystem catalog would (``<root>/<db>.db/<table>``), using the
package's metadata code for the file side (schema-0, the commit's create-if-absent of ``snapshot-N``, tags,
branches, rollback). pypaimon's REST client runs against it unchanged,
which is what makes it an independent check of the server.

Endpoints (paths under ``/v1/<prefix>``): config; databases (list, create, get, drop, alter); tables (list,
create, get, drop, rename; alter answers 501); ``commit`` (the table id must match and ``baseSnapshotUuid`` must
be the latest snapshot's uuid, else ``success: false``); ``token`` (vended data credentials with a short life,
counted per table); ``snapshot``; ``rollback``; branches (list, create empty or from a tag, drop, rename,
forward); tags (list, create, get, delete). Requests are bounded: bodies over 16 MiB are refused (413), every
connection times out after 10 s, listings are paged (``maxResults``, ``pageToken``). A bearer token is required
(401 otherwise).
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

from pyspark_paimon.errors import (
    BranchError,
    BranchNotFoundError,
    PaimonError,
    SnapshotNotFoundError,
    TagError,
    TagNotFoundError,
)
from pyspark_paimon.metadata.identifier import split_suffix
from pyspark_paimon.metadata.io.fileio import FileIO
from pyspark_paimon.metadata.maintenance.expire import delete_branches
from pyspark_paimon.metadata.refs.branches import BranchManager
from pyspark_paimon.metadata.refs.rollback import rollback_to
from pyspark_paimon.metadata.refs.tags import TagManager, create_tag
from pyspark_paimon.metadata.schema.table_schema import SchemaManager
from pyspark_paimon.metadata.snapshots.snapshot import MAIN_BRANCH, Snapshot
from pyspark_paimon.metadata.store import FileStore
from pyspark_paimon.metadata.types.json_codec import fields_from_json

MAX_BODY = 16 * 1024 * 1024
SOCKET_TIMEOUT_S = 10.0
PAGE_SIZE = 100


class HttpError(Exception):
    def __init__(self, code: int, message: str, resource_type: str | None = None, resource_name: str | None = None):
        super().__init__(message)
        self.code, self.message, self.resource_type, self.resource_name = code, message, resource_type, resource_name


def not_found(kind: str, name: str) -> HttpError:
    return HttpError(404, f"{kind.title()} {name} does not exist.", kind, name)


def exists(kind: str, name: str) -> HttpError:
    return HttpError(409, f"{kind.title()} {name} already exists.", kind, name)


@dataclass
class TableEntry:
    id: str
    path: str  # in the server's file system
    created_at: int = field(default_factory=lambda: int(time.time() * 1000))


@dataclass
class CatalogState:
    """What the server keeps: databases with their options, tables with their ids and directories."""

    root: str  # the warehouse root's path in the server's file system
    databases: dict[str, dict[str, str]] = field(default_factory=dict)
    tables: dict[tuple[str, str], TableEntry] = field(default_factory=dict)
    token_requests: dict[str, int] = field(default_factory=dict)
    commits: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.RLock = field(default_factory=threading.RLock)


@dataclass
class ServerConfig:
    warehouse: str = "warehouse"
    prefix: str = "paimon"
    bearer: str = "test-bearer-token"
    data_token: bool = True
    token_ttl_ms: int = 3_600_000
    #: The data credentials to vend, per request number (keys as Paimon names them).
    vend: Callable[[int], dict[str, str]] = field(
        default=lambda n: {"fs.s3.accessKeyId": f"AKID-{n}", "fs.s3.accessKeySecret": f"vended-secret-{n}"}
    )


class RestCatalogServer:
    """Serves one warehouse (``config.warehouse``) rooted at ``root``; ``uri`` once started."""

    def __init__(self, root: str, config: ServerConfig | None = None, storage_options: dict[str, Any] | None = None):
        self.config = config or ServerConfig()
        self.fileio, root_path = FileIO.for_uri(str(root), storage_options)
        self.state = CatalogState(root_path)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def uri(self) -> str:
        assert self._httpd is not None, "start() the server first"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "RestCatalogServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = SOCKET_TIMEOUT_S
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet test output
                pass

            def do_GET(self) -> None:  # noqa: N802
                server.handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                server.handle(self, "POST")

            def do_DELETE(self) -> None:  # noqa: N802
                server.handle(self, "DELETE")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="rest-catalog", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    # -- plumbing ----------------------------------------------------------------------------------
    def handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        try:
            if req.headers.get("Authorization") != f"Bearer {self.config.bearer}":
                raise HttpError(401, "Not authorized: missing or wrong bearer token.")
            length = int(req.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                raise HttpError(413, f"Request body of {length} bytes is larger than {MAX_BODY}.")
            raw = req.rfile.read(length) if length else b""
            body = json.loads(raw) if raw.strip() else {}
            url = urlsplit(req.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            with self.state.lock:
                answer = self.route(method, url.path, query, body)
            self._reply(req, 200, answer)
        except HttpError as e:
            error = {"message": e.message, "resourceType": e.resource_type, "resourceName": e.resource_name}
            self._reply(req, e.code, {**error, "code": e.code})
        except (PaimonError, ValueError, KeyError) as e:
            self._reply(req, 400, {"message": f"{type(e).__name__}: {e}", "code": 400})

    @staticmethod
    def _reply(req: BaseHTTPRequestHandler, code: int, answer: dict[str, Any] | None) -> None:
        data = json.dumps(answer if answer is not None else {}).encode()
        req.send_response(code)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)

    def route(self, method: str, path: str, query: dict[str, str], body: dict[str, Any]) -> dict[str, Any] | None:
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts == ["v1", "config"] and method == "GET":
            return self.get_config(query)
        if len(parts) < 3 or parts[0] != "v1" or parts[1] != self.config.prefix:
            raise HttpError(404, f"No endpoint {method} {path}.")
        rest = parts[2:]
        routes: list[tuple[str, str, Callable[..., dict[str, Any] | None]]] = [
            ("GET", "databases", self.list_databases),
            ("POST", "databases", self.create_database),
            ("GET", "databases/*", self.get_database),
            ("DELETE", "databases/*", self.drop_database),
            ("POST", "databases/*", self.alter_database),
            ("GET", "databases/*/tables", self.list_tables),
            ("POST", "databases/*/tables", self.create_table),
            ("POST", "tables/rename", self.rename_table),
            ("GET", "databases/*/tables/*", self.get_table),
            ("POST", "databases/*/tables/*", self.alter_table),
            ("DELETE", "databases/*/tables/*", self.drop_table),
            ("POST", "databases/*/tables/*/commit", self.commit),
            ("GET", "databases/*/tables/*/token", self.token),
            ("GET", "databases/*/tables/*/snapshot", self.latest_snapshot),
            ("POST", "databases/*/tables/*/rollback", self.rollback),
            ("GET", "databases/*/tables/*/branches", self.list_branches),
            ("POST", "databases/*/tables/*/branches", self.create_branch),
            ("DELETE", "databases/*/tables/*/branches/*", self.drop_branch),
            ("POST", "databases/*/tables/*/branches/*/rename", self.rename_branch),
            ("POST", "databases/*/tables/*/branches/*/forward", self.forward_branch),
            ("GET", "databases/*/tables/*/tags", self.list_tags),
            ("POST", "databases/*/tables/*/tags", self.create_tag),
            ("GET", "databases/*/tables/*/tags/*", self.get_tag),
            ("DELETE", "databases/*/tables/*/tags/*", self.delete_tag),
        ]
        for verb, pattern, fn in routes:
            shape = pattern.split("/")
            if verb == method and len(shape) == len(rest) and all(s in ("*", r) for s, r in zip(shape, rest)):
                args = [r for s, r in zip(shape, rest) if s == "*"]
                return fn(*args, query=query, body=body)
        raise HttpError(404, f"No endpoint {method} {path}.")

    @staticmethod
    def _page(items: list[str], query: dict[str, str]) -> tuple[list[str], str | None]:
        items = sorted(items)
        token = query.get("pageToken")
        if token:
            items = [i for i in items if i > token]
        size = int(query.get("maxResults") or PAGE_SIZE)
        page = items[:size]
        return page, (page[-1] if len(items) > size else None)

    # -- config and databases ----------------------------------------------------------------------
    def get_config(self, query: dict[str, str]) -> dict[str, Any]:
        if query.get("warehouse") != self.config.warehouse:
            raise HttpError(404, f"Warehouse {query.get('warehouse')!r} does not exist.")
        overrides = {"data-token.enabled": "true"} if self.config.data_token else {}
        return {"defaults": {"prefix": self.config.prefix}, "overrides": overrides}

    def _require_db(self, name: str) -> dict[str, str]:
        if name not in self.state.databases:
            raise not_found("DATABASE", name)
        return self.state.databases[name]

    def list_databases(self, *, query: dict[str, str], body: Any) -> dict[str, Any]:
        page, token = self._page(list(self.state.databases), query)
        return {"databases": page, "nextPageToken": token}

    def create_database(self, *, query: dict[str, str], body: Any) -> None:
        name = body["name"]
        if name in self.state.databases:
            raise exists("DATABASE", name)
        self.state.databases[name] = {str(k): str(v) for k, v in (body.get("options") or {}).items()}
        self.fileio.mkdirs(self._db_path(name))

    def get_database(self, name: str, *, query: dict[str, str], body: Any) -> dict[str, Any]:
        options = self._require_db(name)
        return {"id": name, "name": name, "location": self.fileio.uri(self._db_path(name)), "options": options}

    def drop_database(self, name: str, *, query: dict[str, str], body: Any) -> None:
        self._require_db(name)
        for key in [k for k in self.state.tables if k[0] == name]:
            self._drop(key)
        del self.state.databases[name]
        self.fileio.delete_dir(self._db_path(name))

    def alter_database(self, name: str, *, query: dict[str, str], body: Any) -> dict[str, Any]:
        options = self._require_db(name)
        removed = [k for k in body.get("removals") or [] if options.pop(k, None) is not None]
        updates = {str(k): str(v) for k, v in (body.get("updates") or {}).items()}
        options.update(updates)
        return {"removed": removed, "updated": sorted(updates), "missing": []}

    # -- tables ------------------------------------------------------------------------------------
    def _entry(self, db: str, obj: str) -> tuple[TableEntry, str]:
        """The table an object name (``t`` or ``t$branch_b``) names, and its branch."""
        self._require_db(db)
        base, suffix = split_suffix(obj)
        if suffix.system_table:
            raise HttpError(400, f"System table {obj} is not served here.")
        entry = self.state.tables.get((db, base))
        if entry is None:
            raise not_found("TABLE", f"{db}.{obj}")
        branch = suffix.branch or MAIN_BRANCH
        if branch != MAIN_BRANCH and not BranchManager(self._store(entry)).exists(branch):
            raise not_found("TABLE", f"{db}.{obj}")
        return entry, branch

    def _store(self, entry: TableEntry, branch: str = MAIN_BRANCH) -> FileStore:
        return FileStore(self.fileio, entry.path, branch)

    def _db_path(self, db: str) -> str:
        return f"{self.state.root}/{db}.db"

    def list_tables(self, db: str, *, query: dict[str, str], body: Any) -> dict[str, Any]:
        self._require_db(db)
        names = [t for (d, t) in self.state.tables if d == db]
        prefix = (query.get("tableNamePattern") or "").rstrip("%")
        page, token = self._page([n for n in names if n.startswith(prefix)], query)
        return {"tables": page, "nextPageToken": token}

    def create_table(self, db: str, *, query: dict[str, str], body: Any) -> None:
        self._require_db(db)
        name = body["identifier"]["object"]
        if (db, name) in self.state.tables:
            raise exists("TABLE", f"{db}.{name}")
        schema = body["schema"]
        path = f"{self._db_path(db)}/{name}"
        if self.fileio.exists(f"{path}/schema"):
            raise exists("TABLE", f"{db}.{name}")
        SchemaManager(self.fileio, path).create_table(
            fields_from_json(schema["fields"]),
            schema.get("partitionKeys") or [],
            schema.get("primaryKeys") or [],
            {str(k): str(v) for k, v in (schema.get("options") or {}).items()},
            schema.get("comment"),
        )
        self.state.tables[(db, name)] = TableEntry(str(uuid.uuid4()), path)

    def get_table(self, db: str, obj: str, *, query: dict[str, str], body: Any) -> dict[str, Any]:
        entry, branch = self._entry(db, obj)
        schema = self._store(entry, branch).schema()
        as_json = json.loads(schema.to_json())
        return {
            "id": entry.id,
            "database": db,
            "name": obj,
            "path": self.fileio.uri(entry.path),
            "isExternal": False,
            "schemaId": schema.id,
            "schema": {
                "fields": as_json["fields"],
                "partitionKeys": as_json["partitionKeys"],
                "primaryKeys": as_json["primaryKeys"],
                "options": as_json["options"],
                "comment": as_json.get("comment"),
            },
            "owner": "tests",
            "createdAt": entry.created_at,
            "createdBy": "tests",
            "updatedAt": entry.created_at,
            "updatedBy": "tests",
        }

    def alter_table(self, db: str, obj: str, *, query: dict[str, str], body: Any) -> None:
        self._entry(db, obj)
        raise HttpError(501, "Schema changes are not served by the in-suite REST catalog.")

    def _drop(self, key: tuple[str, str]) -> None:
        entry = self.state.tables.pop(key)
        self.fileio.delete_dir(entry.path)

    def drop_table(self, db: str, obj: str, *, query: dict[str, str], body: Any) -> None:
        self._entry(db, obj)
        self._drop((db, obj))

    def rename_table(self, *, query: dict[str, str], body: Any) -> None:
        src, dst = body["source"], body["destination"]
        key = (src["database"], src["object"])
        entry, _ = self._entry(*key)
        self._require_db(dst["database"])
        target = (dst["database"], dst["object"])
        if target in self.state.tables:
            raise exists("TABLE", ".".join(target))
        new_path = f"{self._db_path(target[0])}/{target[1]}"
        self.fileio.rename(entry.path, new_path)
        entry.path = new_path
        self.state.tables[target] = self.state.tables.pop(key)

    # -- commits, credentials, snapshots -----------------------------------------------------------
    def commit(self, db: str, obj: str, *, query: dict[str, str], body: Any) -> dict[str, Any]:
        entry, branch = self._entry(db, obj)
        if body.get("tableId") != entry.id:
            raise not_found("TABLE", f"{db}.{obj}")
        store = self._store(entry, branch)
        snapshot = Snapshot.from_dict(body["snapshot"])
        latest = store.snapshots.latest()
        self.state.commits.append({"table": f"{db}.{obj}", "snapshot": snapshot.id})
        if (latest.uuid if latest else None) != body.get("baseSnapshotUuid"):
            return {"success": False}
        if snapshot.id != (latest.id + 1 if latest else 1):
            return {"success": False}
        return {"success": store.snapshots.try_commit(snapshot)}

    def token(self, db: str, obj: str, *, query: dict[str, str], body: Any) -> dict[str, Any]:
        self._entry(db, obj)
        key = f"{db}.{split_suffix(obj)[0]}"
        n = self.state.token_requests.get(key, 0) + 1
        self.state.token_requests[key] = n
        expires = int(time.time() * 1000) + self.config.token_ttl_ms
        # The published spec names the expiry 'expiresAt'; Java's and pypaimon's GetTableTokenResponse read
        # 'expiresAtMillis'. Both are sent, so every client finds its own.
        return {"token": self.config.vend(n), "expiresAt": expires, "expiresAtMillis": expires}

    def latest_snapshot(self, db: str, obj: str, *, query: dict[str, str], body: Any) -> dict[str, Any]:
        entry, branch = self._entry(db, obj)
        latest = self._store(entry, branch).snapshots.latest()
        if latest is None:
            raise not_found("SNAPSHOT", "latest")
        live = self._store(entry, branch).live_entries(latest)
        return {
            "snapshot": {
                "snapshot": latest.to_dict(),
                "recordCount": latest.total_record_count or 0,
                "fileSizeInBytes": sum(e.file.file_size for e in live),
                "fileCount": len(live),
                "lastFileCreationTime": latest.time_millis,
            }
        }

    def rollback(self, db: str, obj: str, *, query: dict[str, str], body: Any) -> None:
        entry, branch = self._entry(db, obj)
        instant = body["instant"]
        try:
            if instant["type"] == "tag":
                rollback_to(self._store(entry, branch), tag=instant["tagName"])
            else:
                rollback_to(self._store(entry, branch), snapshot_id=int(instant["snapshotId"]))
        except TagNotFoundError:
            raise not_found("TAG", instant.get("tagName", "")) from None
        except SnapshotNotFoundError:
            raise not_found("SNAPSHOT", str(instant.get("snapshotId"))) from None

    # -- branches and tags -------------------------------------------------------------------------
    def list_branches(self, db: str, obj: str, *, query: dict[str, str], body: Any) -> dict[str, Any]:
        entry, _ = self._entry(db, obj)
        return {"branches": BranchManager(self._store(entry)).names()}

    def create_branch(self, db: str, obj: str, *, query: dict[str, str], body: Any) -> None:
        entry, _ = self._entry(db, obj)
        manager = BranchManager(self._store(entry))
        name, tag = body["branch"], body.get("fromTag")
        if manager.exists(name):
            raise exists("BRANCH", name)
        if tag and not TagManager(self._store(entry)).exists(tag):
            raise not_found("TAG", tag)
        try:
            manager.create(name, MAIN_BRANCH, tag=tag or None)
        except BranchError as e:
            raise HttpError(400, str(e)) from None

    def drop_branch(self, db: str, obj: str, branch: str, *, query: dict[str, str], body: Any) -> None:
        entry, _ = self._entry(db, obj)
        if not BranchManager(self._store(entry)).exists(branch):
            raise not_found("BRANCH", branch)
        delete_branches(self._store(entry), [branch], clean_files=True)

    def rename_branch(self, db: str, obj: str, branch: str, *, query: dict[str, str], body: Any) -> None:
        entry, _ = self._entry(db, obj)
        manager = BranchManager(self._store(entry))
        if not manager.exists(branch):
            raise not_found("BRANCH", branch)
        if manager.exists(body["toBranch"]):
            raise exists("BRANCH", body["toBranch"])
        manager.rename(branch, body["toBranch"])

    def forward_branch(self, db: str, obj: str, branch: str, *, query: dict[str, str], body: Any) -> None:
        entry, _ = self._entry(db, obj)
        try:
            BranchManager(self._store(entry)).fast_forward(branch)
        except BranchNotFoundError:
            raise not_found("BRANCH", branch) from None

    def list_tags(self, db: str, obj: str, *, query: dict[str, str], body: Any) -> dict[str, Any]:
        entry, branch = self._entry(db, obj)
        names = [t.name for t in TagManager(self._store(entry, branch)).list_tags()]
        prefix = query.get("tagNamePrefix") or ""
        page, token = self._page([n for n in names if n.startswith(prefix)], query)
        return {"tags": page, "nextPageToken": token}

    def create_tag(self, db: str, obj: str, *, query: dict[str, str], body: Any) -> None:
        entry, branch = self._entry(db, obj)
        store = self._store(entry, branch)
        name = body["tagName"]
        if TagManager(store).exists(name):
            if body.get("ignoreIfExists"):
                return
            raise exists("TAG", name)
        snapshot_id = body.get("snapshotId")
        try:
            create_tag(store, name, snapshot_id=snapshot_id, time_retained=body.get("timeRetained"))
        except SnapshotNotFoundError:
            raise not_found("SNAPSHOT", str(snapshot_id)) from None
        except TagError as e:
            raise HttpError(400, str(e)) from None

    def get_tag(self, db: str, obj: str, tag: str, *, query: dict[str, str], body: Any) -> dict[str, Any]:
        entry, branch = self._entry(db, obj)
        try:
            found = TagManager(self._store(entry, branch)).get_tag(tag)
        except TagNotFoundError:
            raise not_found("TAG", tag) from None
        created = int(found.create_time.timestamp() * 1000) if found.create_time else None
        retained = f"{found.time_retained_ms} ms" if found.time_retained_ms is not None else None
        return {
            "tagName": tag,
            "snapshot": found.snapshot.to_dict(),
            "tagCreateTime": created,
            "tagTimeRetained": retained,
        }

    def delete_tag(self, db: str, obj: str, tag: str, *, query: dict[str, str], body: Any) -> None:
        entry, branch = self._entry(db, obj)
        manager = TagManager(self._store(entry, branch))
        if not manager.exists(tag):
            raise not_found("TAG", tag)
        manager.delete(tag)


def secrets_in(text: str, secrets: list[str]) -> list[str]:
    """The secrets that appear in ``text`` (for the never-logged checks)."""
    return [s for s in secrets if s and re.search(re.escape(s), text)]
