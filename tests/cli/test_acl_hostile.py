"""`gcite acl` against a lying or slow Knowledge API (issue 22, points 5 and 6): the same page forever, `has_more` as
text, pages without end, a body that trickles in. Each run ends soon, with a clear error, after few requests."""

import json
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import pytest

from gcite import acl as acl_admin
from gcite.cli import acl as acl_cli
from gcite.cli.main import main
from tests.support.local_http import origin, start_server, stop_server

KEY = "dataset-Zq8uSECRETk3yWx41"
FIELDS = {
    "doc_metadata": [{"id": "f1", "name": "access_roles", "type": "string", "count": 1}],
    "built_in_field_enabled": False,
}


def document(n):
    return {
        "id": f"doc-{n}",
        "name": f"document {n}",
        "doc_metadata": [{"id": "f1", "name": "access_roles", "type": "string", "value": ",hr,"}],
    }


class Liar:
    """A Knowledge API on 127.0.0.1 whose document list is `pages(page number)` → (body, seconds per byte)."""

    def __init__(self, pages):
        self.pages, self.requests = pages, []
        liar = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                parts = urlsplit(self.path)
                liar.requests.append(parts.path)
                if parts.path.endswith("/metadata"):
                    body, pause = FIELDS, 0.0
                else:
                    body, pause = liar.pages(int(parse_qs(parts.query)["page"][0]))
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    if not pause:
                        self.wfile.write(data)
                        return
                    for byte in data:
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(pause)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = start_server(Handler)
        self.base_url = f"{origin(self.server)}/v1"

    def listings(self):
        return sum(path.endswith("/documents") for path in self.requests)

    def close(self):
        stop_server(self.server)


@pytest.fixture
def liar():
    servers = []

    def start(pages):
        servers.append(Liar(pages))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def audit(server, capsys, monkeypatch, *extra):
    monkeypatch.setenv("DIFY_DATASET_API_KEY", KEY)
    monkeypatch.setattr(acl_cli, "pause", lambda seconds: None)
    started = time.monotonic()
    code = main(["acl", "audit", "--dataset", "ds-1", "--base-url", server.base_url, *extra])
    out, err = capsys.readouterr()
    assert KEY not in out + err and "Traceback" not in err
    return code, out, err, time.monotonic() - started


def test_the_same_page_again_and_again_ends_the_run_at_the_second_page(liar, capsys, monkeypatch):
    server = liar(lambda page: ({"data": [document(1), document(2)], "has_more": True, "page": page}, 0))
    code, out, err, _ = audit(server, capsys, monkeypatch)
    assert code == acl_admin.EXIT_API and server.listings() == 2
    assert err.strip().endswith(
        "error: listing documents (page 2): the server sent only documents already listed "
        "but says has_more is true; stopped after 2 documents (the listing is not complete: "
        "run again, or check the server)"
    )
    assert out.count("doc-1") == 1 and out.count("doc-2") == 1


def test_an_empty_page_that_claims_more_ends_the_run(liar, capsys, monkeypatch):
    server = liar(lambda page: ({"data": [document(1)] if page == 1 else [], "has_more": True}, 0))
    code, _, err, _ = audit(server, capsys, monkeypatch)
    assert code == acl_admin.EXIT_API and server.listings() == 2
    assert "the server sent no documents but says has_more is true" in err


@pytest.mark.parametrize("has_more", ["false", "true", 1, 0, None, [], {}])
def test_has_more_must_be_true_or_false(liar, capsys, monkeypatch, has_more):
    server = liar(lambda page: ({"data": [document(page)], "has_more": has_more}, 0))
    code, _, err, _ = audit(server, capsys, monkeypatch)
    assert code == acl_admin.EXIT_API and server.listings() == 1
    assert (
        f"error: listing documents (page 1): the answer's has_more is {json.dumps(has_more)}, not true or false" in err
    )


def test_pages_without_end_stop_at_the_request_bound(liar, capsys, monkeypatch):
    server = liar(lambda page: ({"data": [document(page)], "has_more": True}, 0))
    code, out, err, _ = audit(server, capsys, monkeypatch, "--max-requests", "40")
    assert code == acl_admin.EXIT_API and len(server.requests) == 40
    assert "stopped after 40 requests to the Knowledge API, the most one run makes (--max-requests 40)" in err
    assert out.count("doc-") == 39


def test_pages_without_end_stop_at_the_time_bound(liar, capsys, monkeypatch):
    def slow(page):
        time.sleep(0.05)
        return {"data": [document(page)], "has_more": True}, 0

    server = liar(slow)
    code, _, err, elapsed = audit(server, capsys, monkeypatch, "--max-minutes", "0.02")  # 1.2 s
    assert code == acl_admin.EXIT_API and "the longest one run takes (--max-minutes 0.02)" in err
    assert 1.2 <= elapsed < 2.5, elapsed


def test_the_run_bounds_are_checked_as_arguments(liar, capsys, monkeypatch):
    server = liar(lambda page: ({"data": [], "has_more": False}, 0))
    for extra, message in (
        (["--max-requests", "0"], "--max-requests: expected 1 or more, got 0"),
        (["--max-minutes", "nan"], "--max-minutes: expected a number of minutes above 0, got nan"),
        (["--max-minutes", "-1"], "--max-minutes: expected a number of minutes above 0, got -1"),
    ):
        code, _, err, _ = audit(server, capsys, monkeypatch, *extra)
        assert code == acl_admin.EXIT_USAGE and f"error: {message}" in err
    assert server.requests == []


def test_a_body_that_trickles_in_ends_at_the_request_deadline(liar):
    server = liar(lambda page: ({"data": [document(1)], "has_more": False, "padding": "x" * 400}, 0.05))
    api = acl_admin.KnowledgeApi(server.base_url, KEY, retries=1, sleep=lambda s: None, request_seconds=1.0)
    started = time.monotonic()
    with pytest.raises(acl_admin.AclAdminError) as caught:
        list(api.documents("ds-1"))
    elapsed = time.monotonic() - started
    assert caught.value.code == acl_admin.EXIT_API
    assert str(caught.value).startswith("listing documents (page 1): GET ") and str(caught.value).endswith(
        "failed after 2 attempts: no complete answer within 1 s"
    )
    assert 2.0 <= elapsed < 3.0, elapsed  # two attempts of 1 s each; the body alone takes 25 s
    api.close()


def test_the_time_bound_counts_from_the_start_of_the_run():
    now = [0.0]
    api = acl_admin.KnowledgeApi("http://127.0.0.1:9/v1", KEY, clock=lambda: now[0], max_minutes=5)
    now[0] = 299.0
    api.check_bounds("listing")
    now[0] = 300.0
    with pytest.raises(acl_admin.AclAdminError, match=r"^listing: stopped after 5.0 minutes"):
        api.check_bounds("listing")
    api.close()
