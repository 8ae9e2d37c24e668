"""A local stand-in for Dify's Knowledge API (service_api/dataset), answering in the shapes Dify's source defines.

It keeps each document's stored `doc_metadata` (a JSON object, as Dify's JSONB column) and its field bindings, and
implements `update_documents_metadata` as Dify's services/metadata_service.py does: without `partial_update` the
document's metadata is REPLACED by `metadata_list` (and its bindings rebuilt); with it, the listed fields are set on
a copy of the stored metadata. `ignore_partial_update=True` behaves like a Dify from before the flag.
"""

from __future__ import annotations

import copy
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

MAX_PER_PAGE = 100


class FakeDataset:
    def __init__(self, fields: dict[str, str], built_in_field_enabled: bool = False):
        self.id = str(uuid.uuid4())
        self.fields = [{"id": str(uuid.uuid4()), "name": name, "type": type_} for name, type_ in fields.items()]
        self.built_in_field_enabled = built_in_field_enabled
        self.documents: list[dict[str, Any]] = []  # newest first, as Dify lists them

    def field(self, name: str) -> dict[str, Any]:
        return next(f for f in self.fields if f["name"] == name)

    def add(self, name: str, metadata: dict[str, Any] | str | None, doc_id: str | None = None) -> str:
        """A document whose stored doc_metadata is `metadata` (every key bound, as the API and the editor do)."""
        doc = {
            "id": doc_id or str(uuid.uuid4()),
            "name": name,
            "doc_metadata": copy.deepcopy(metadata),
            "bound": {f["id"] for f in self.fields if isinstance(metadata, dict) and f["name"] in metadata},
            "updated_at": 1_700_000_000 + len(self.documents),
        }
        self.documents.append(doc)
        return doc["id"]

    def document(self, doc_id: str) -> dict[str, Any]:
        return next(d for d in self.documents if d["id"] == doc_id)

    def details(self, doc: dict[str, Any]) -> Any:
        """Document.doc_metadata_details: one item per bound field (value = stored.get(name)), then built-ins."""
        stored = doc["doc_metadata"]
        if not isinstance(stored, dict):
            return stored  # an unreadable answer, for the tool's sake
        if not stored:
            return []
        items = [
            {"id": f["id"], "name": f["name"], "type": f["type"], "value": stored.get(f["name"])}
            for f in self.fields
            if f["id"] in doc["bound"]
        ]
        if self.built_in_field_enabled:
            items += [
                {"id": "built-in", "name": "document_name", "type": "string", "value": doc["name"]},
                {"id": "built-in", "name": "last_update_date", "type": "time", "value": str(float(doc["updated_at"]))},
            ]
        return items

    def document_response(self, doc: dict[str, Any], position: int) -> dict[str, Any]:
        return {
            "id": doc["id"],
            "position": position,
            "data_source_type": "upload_file",
            "data_source_info": {"upload_file_id": doc["id"]},
            "data_source_detail_dict": {},
            "dataset_process_rule_id": None,
            "name": doc["name"],
            "created_from": "api",
            "created_by": "u-1",
            "created_at": 1_700_000_000,
            "tokens": 10,
            "indexing_status": "completed",
            "error": None,
            "enabled": True,
            "disabled_at": None,
            "disabled_by": None,
            "archived": False,
            "display_status": "available",
            "word_count": 10,
            "hit_count": 0,
            "doc_form": "text_model",
            "doc_metadata": self.details(doc),
            "summary_index_status": None,
            "need_summary": False,
        }


class KnowledgeApiServer:
    def __init__(
        self, api_key: str, ignore_partial_update: bool = False, detail_endpoint: bool = True, drop_writes: bool = False
    ):
        self.api_key = api_key
        self.ignore_partial_update = ignore_partial_update  # a Dify from before `partial_update`
        self.detail_endpoint = detail_endpoint  # GET /datasets/{id}/documents/{doc} (older versions lack it)
        self.drop_writes = drop_writes  # an older Dify logged a failed metadata update and still answered success
        self.datasets: dict[str, FakeDataset] = {}
        self.requests: list[tuple[str, str, Any]] = []  # (method, path with query, JSON body)
        self.faults: list[
            tuple[str, str, int, dict[str, str], str]
        ] = []  # (method, path prefix, status, headers, message)
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> KnowledgeApiServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def add_dataset(self, dataset: FakeDataset) -> FakeDataset:
        self.datasets[dataset.id] = dataset
        return dataset

    def writes(self) -> list[Any]:
        return [body for method, _, body in self.requests if method == "POST"]

    def fail(
        self,
        method: str,
        path_prefix: str,
        status: int,
        times: int = 1,
        headers: dict[str, str] | None = None,
        message: str = "injected",
    ):
        self.faults += [(method, path_prefix, status, headers or {}, message)] * times

    # --- HTTP ---
    def handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.handle_any("GET")

            def do_POST(self) -> None:
                self.handle_any("POST")

            def handle_any(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                body = json.loads(raw) if raw else None
                with server.lock:
                    server.requests.append((method, self.path, body))
                    status, payload, headers = server.answer(method, self.path, self.headers, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def answer(self, method: str, raw_path: str, headers: Any, body: Any) -> tuple[int, Any, dict[str, str]]:
        url = urlsplit(raw_path)
        path, query = url.path, {k: v[-1] for k, v in parse_qs(url.query).items()}
        for n, (f_method, prefix, status, extra, message) in enumerate(self.faults):
            if f_method == method and path.startswith(prefix):
                del self.faults[n]
                return status, error(status, message), extra
        if headers.get("Authorization") != f"Bearer {self.api_key}":
            return 401, error(401, "Access token is invalid"), {}
        parts = path.strip("/").split("/")
        if parts[:2] != ["v1", "datasets"] or len(parts) < 4:
            return 404, error(404, "The requested URL was not found on the server."), {}
        dataset = self.datasets.get(parts[2])
        if dataset is None:
            return 404, error(404, "Dataset not found."), {}
        rest = parts[3:]
        if method == "GET" and rest == ["metadata"]:
            return (
                200,
                {
                    "doc_metadata": [
                        dict(f, count=sum(f["id"] in d["bound"] for d in dataset.documents)) for f in dataset.fields
                    ],
                    "built_in_field_enabled": dataset.built_in_field_enabled,
                },
                {},
            )
        if method == "GET" and rest == ["documents"]:
            page, limit = int(query.get("page", 1)), int(query.get("limit", 20))
            per_page = min(limit, MAX_PER_PAGE)
            listed = [d for d in dataset.documents if query.get("keyword", "") in d["name"]]
            items = listed[(page - 1) * per_page : page * per_page]
            return (
                200,
                {
                    "data": [dataset.document_response(d, (page - 1) * per_page + i + 1) for i, d in enumerate(items)],
                    "has_more": len(items) == limit,
                    "limit": limit,
                    "total": len(listed),
                    "page": page,
                },
                {},
            )
        if method == "GET" and len(rest) == 2 and rest[0] == "documents" and self.detail_endpoint:
            doc = next((d for d in dataset.documents if d["id"] == rest[1]), None)
            if doc is None:
                return 404, error(404, "Document not found."), {}
            return 200, {"id": doc["id"], "doc_type": None, "doc_metadata": dataset.details(doc)}, {}
        if method == "POST" and rest == ["documents", "metadata"]:
            for operation in body["operation_data"]:
                if not self.drop_writes:
                    self.update_document(dataset, operation)
            return 200, {"result": "success"}, {}
        return 404, error(404, "The requested URL was not found on the server."), {}

    def update_document(self, dataset: FakeDataset, operation: dict[str, Any]) -> None:
        doc = dataset.document(operation["document_id"])
        partial = operation.get("partial_update", False) and not self.ignore_partial_update
        stored = copy.deepcopy(doc["doc_metadata"]) if partial and doc["doc_metadata"] else {}
        for item in operation["metadata_list"]:
            stored[item["name"]] = item["value"]
        doc["updated_at"] += 1000
        doc["doc_metadata"] = stored
        if not partial:
            doc["bound"] = set()
        doc["bound"] |= {item["id"] for item in operation["metadata_list"]}


def error(status: int, message: str) -> dict[str, Any]:
    code = {401: "unauthorized", 403: "forbidden", 404: "not_found", 429: "too_many_requests"}.get(
        status, "internal_server_error"
    )
    return {"code": code, "message": message, "status": status}
