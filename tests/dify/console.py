"""Talking to Dify's api as an operator does: the console API (set-up, login, model and tool credentials, DSL
import, publish, keys), the Knowledge API (dataset key) and the Service API (app key, `POST /v1/chat-messages`).
Every call checks its status and raises `DifyError` with Dify's answer when it is not the expected one."""

import base64
import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

import requests

EMAIL = "admin@gcite.test"
PASSWORD = "GciteTest2026pw"


class DifyError(AssertionError):
    pass


def check(response: requests.Response, what: str, ok: tuple[int, ...] = (200, 201)) -> Any:
    if response.status_code not in ok:
        raise DifyError(f"{what}: HTTP {response.status_code}: {response.text[:2000]}")
    return response.json() if response.content else None


class Console:
    def __init__(self, base_url: str) -> None:
        self.base = base_url.rstrip("/")
        self.http = requests.Session()

    def url(self, path: str) -> str:
        return f"{self.base}/console/api{path}"

    def setup_and_login(self) -> None:
        check(
            self.http.post(self.url("/setup"), json={"email": EMAIL, "name": "G-Cite admin", "password": PASSWORD}),
            "console set-up",
        )
        done = check(self.http.get(self.url("/setup")), "set-up status")
        if done.get("step") != "finished":
            raise DifyError(f"set-up did not finish: {done}")
        password = base64.b64encode(PASSWORD.encode()).decode()
        check(
            self.http.post(self.url("/login"), json={"email": EMAIL, "password": password, "remember_me": True}),
            "console login",
        )
        csrf = self.http.cookies.get("csrf_token")
        if not csrf or not self.http.cookies.get("access_token"):
            raise DifyError(f"login set no session cookies: {sorted(self.http.cookies.keys())}")
        self.http.headers["X-CSRF-Token"] = csrf

    def get(self, path: str, what: str, **kwargs: Any) -> Any:
        return check(self.http.get(self.url(path), **kwargs), what)

    def post(self, path: str, body: Mapping[str, Any] | None, what: str, ok: tuple[int, ...] = (200, 201)) -> Any:
        return check(self.http.post(self.url(path), json=dict(body or {})), what, ok)

    def tenant_id(self) -> str:
        workspaces = self.get("/workspaces", "workspaces")["workspaces"]
        current = [w for w in workspaces if w.get("current")] or workspaces
        if len(current) != 1:
            raise DifyError(f"expected one current workspace: {workspaces}")
        return current[0]["id"]

    def set_llm(self, provider: str, model: str, credentials: Mapping[str, Any]) -> None:
        self.post(
            f"/workspaces/current/model-providers/{provider}/credentials",
            {"credentials": dict(credentials)},
            "model provider credentials",
        )
        self.post(
            "/workspaces/current/default-model",
            {"model_settings": [{"model_type": "llm", "provider": provider, "model": model}]},
            "default model",
        )

    def add_tool_credentials(self, provider: str, credentials: Mapping[str, Any]) -> None:
        self.post(
            f"/workspaces/current/tool-provider/builtin/{provider}/add",
            {"credentials": dict(credentials), "type": "api-key", "name": "test-dify"},
            "tool credentials",
        )

    def dataset_api_key(self) -> str:
        return self.post("/datasets/api-keys", None, "dataset API key")["token"]

    def import_app(self, dsl_text: str) -> tuple[str, dict[str, Any]]:
        result = self.post(
            "/apps/imports", {"mode": "yaml-content", "yaml_content": dsl_text}, "DSL import", ok=(200, 202)
        )
        if result.get("status") == "pending":  # a DSL of another version is imported after a confirmation
            result = self.post(f"/apps/imports/{result['id']}/confirm", None, "DSL import confirm")
        if result.get("status") not in ("completed", "completed-with-warnings") or not result.get("app_id"):
            raise DifyError(f"DSL import failed: {result}")
        return result["app_id"], result

    def publish(self, app_id: str) -> None:
        self.post(f"/apps/{app_id}/workflows/publish", {}, "publish")

    def site_code(self, app_id: str) -> str:
        """The code of the app's web app site (its URL's last part; the web app API's `X-App-Code`)."""
        site = self.get(f"/apps/{app_id}", "app detail")["site"]
        return site.get("code") or site["access_token"]

    def app_api_key(self, app_id: str) -> str:
        return self.post(f"/apps/{app_id}/api-keys", None, "app API key")["token"]


class Knowledge:
    """The Knowledge API with a dataset key."""

    def __init__(self, base_url: str, key: str) -> None:
        self.base = base_url.rstrip("/") + "/v1"
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {key}"

    def post(self, path: str, body: Mapping[str, Any], what: str) -> Any:
        return check(self.http.post(self.base + path, json=dict(body)), what)

    def get(self, path: str, what: str, **kwargs: Any) -> Any:
        return check(self.http.get(self.base + path, **kwargs), what)

    def wait_indexed(self, dataset_id: str, batches: list[str], timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        pending = list(batches)
        while pending:
            status = self.get(f"/datasets/{dataset_id}/documents/{pending[0]}/indexing-status", "indexing status")
            states = [d.get("indexing_status") for d in status.get("data", [])]
            if any(s == "error" for s in states):
                raise DifyError(f"indexing failed: {status}")
            if states and all(s == "completed" for s in states):
                pending.pop(0)
                continue
            if time.monotonic() > deadline:
                raise DifyError(f"documents not indexed in {timeout:.0f} s (is the Celery worker running?): {status}")
            time.sleep(0.5)


def sse_events(response: requests.Response) -> Iterator[dict[str, Any]]:
    """The events of a Service API stream, split at LF only (as the project's client reads it): each `data:` JSON,
    and `{"event": "ping"}` for Dify's `event: ping` blocks (which carry no data)."""
    buffer = b""
    for chunk in response.iter_content(chunk_size=None):
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            line = line.rstrip(b"\r")
            if line.startswith(b"data:"):
                yield json.loads(line[5:].strip())
            elif line.strip() == b"event: ping":
                yield {"event": "ping"}
    if buffer.strip().startswith(b"data:"):
        yield json.loads(buffer.strip()[5:].strip())


def chat(
    base_url: str,
    app_key: str,
    query: str,
    inputs: Mapping[str, Any],
    *,
    user: str,
    conversation_id: str = "",
    timeout: float = 180,
) -> tuple[int, list[dict[str, Any]]]:
    """One streaming turn through `POST /v1/chat-messages`: (HTTP status, every event)."""
    status, timed = chat_timed(
        base_url, app_key, query, inputs, user=user, conversation_id=conversation_id, timeout=timeout
    )
    return status, [event for _, event in timed]


def chat_timed(
    base_url: str,
    app_key: str,
    query: str,
    inputs: Mapping[str, Any],
    *,
    user: str,
    conversation_id: str = "",
    timeout: float = 180,
) -> tuple[int, list[tuple[float, dict[str, Any]]]]:
    """One streaming turn through `POST /v1/chat-messages`: (HTTP status, every event with the seconds since the
    request when it was read)."""
    body = {"query": query, "inputs": dict(inputs), "response_mode": "streaming", "conversation_id": conversation_id}
    url, headers = f"{base_url.rstrip('/')}/v1/chat-messages", {"Authorization": f"Bearer {app_key}"}
    return timed_turn(url, headers, {**body, "user": user}, timeout)


def timed_turn(
    url: str, headers: Mapping[str, str], body: Mapping[str, Any], timeout: float
) -> tuple[int, list[tuple[float, dict[str, Any]]]]:
    """POST one streaming chat turn: (HTTP status, every event with the seconds since the request when it was
    read); another status is one `http_error` event with the start of the body."""
    start = time.perf_counter()
    response = requests.post(url, stream=True, timeout=timeout, headers=dict(headers), json=dict(body))
    if response.status_code != 200:
        return response.status_code, [
            (0.0, {"event": "http_error", "status": response.status_code, "body": response.text[:2000]})
        ]
    return 200, [(time.perf_counter() - start, event) for event in sse_events(response)]


def conversation_messages(base_url: str, app_key: str, conversation_id: str, *, user: str) -> list[dict[str, Any]]:
    """The conversation's saved messages, oldest first (`GET /v1/messages`)."""
    response = requests.get(
        f"{base_url.rstrip('/')}/v1/messages",
        timeout=60,
        headers={"Authorization": f"Bearer {app_key}"},
        params={"conversation_id": conversation_id, "user": user, "limit": 100},
    )
    return check(response, "conversation messages")["data"]


class WebApp:
    """Dify's web app API as its front end calls it (controllers/web in Dify 1.16.1): the app's site code in the
    `X-App-Code` header, a passport from `GET /api/passport` (an anonymous end user, `user_id` its session id) in
    `X-App-Passport`, then `POST /api/chat-messages` and `GET /api/messages`."""

    def __init__(self, base_url: str, site_code: str, user: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.code = site_code
        passport = requests.get(
            f"{self.base_url}/api/passport", params={"user_id": user}, timeout=30, headers={"X-App-Code": site_code}
        )
        self.headers = {"X-App-Code": site_code, "X-App-Passport": check(passport, "web app passport")["access_token"]}

    def chat_timed(
        self, query: str, inputs: Mapping[str, Any], conversation_id: str = "", timeout: float = 180
    ) -> tuple[int, list[tuple[float, dict[str, Any]]]]:
        body = {
            "query": query,
            "inputs": dict(inputs),
            "response_mode": "streaming",
            "conversation_id": conversation_id,
        }
        return timed_turn(f"{self.base_url}/api/chat-messages", self.headers, body, timeout)

    def messages(self, conversation_id: str) -> list[dict[str, Any]]:
        response = requests.get(
            f"{self.base_url}/api/messages",
            timeout=60,
            headers=self.headers,
            params={"conversation_id": conversation_id, "limit": 100},
        )
        return check(response, "web app messages")["data"]
