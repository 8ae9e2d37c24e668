"""`gcite acl` follows a Knowledge API redirect only to what the HTTP library will connect to on --base-url's scheme,
host and port (issue 34, point 1): every crooked form of `Location`, over real sockets on 127.0.0.1. No request
(and so no key) reaches another origin; a refused redirect ends the run with one clear line (exit 5)."""

import pytest

from gcite import acl as acl_admin
from gcite.cli.main import main
from tests.support.crooked_redirects import FORMS, Recorder

KEY = "dataset-R3directSECRETq81"
FIELDS = {
    "doc_metadata": [{"id": "f1", "name": "access_roles", "type": "string", "count": 0}],
    "built_in_field_enabled": False,
}


def knowledge_api(path):
    return {"data": [], "has_more": False} if path.endswith("/documents") else FIELDS


class Stage:
    location = "/moved"


@pytest.fixture(scope="module")
def servers():
    stage = Stage()
    away = Recorder(knowledge_api)
    home = Recorder(knowledge_api, redirect=lambda path: stage.location if path == "/v1/datasets/d1/metadata" else None)
    yield stage, home, away
    home.close()
    away.close()


@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
def test_a_knowledge_api_redirect_is_followed_only_to_the_base_urls_origin(servers, form, capsys, monkeypatch):
    stage, home, away = servers
    home.requests.clear()
    away.requests.clear()
    stage.location = form.location(home.port, away.port)
    monkeypatch.setenv("DIFY_DATASET_API_KEY", KEY)
    code = main(["acl", "audit", "--dataset", "d1", "--base-url", home.origin + "/v1", "--retries", "0"])
    out, err = capsys.readouterr()
    assert KEY not in out + err
    assert away.requests == []
    assert home.hosts() == {f"127.0.0.1:{home.port}"}
    assert home.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    if form.expected == "refuse":
        assert code == acl_admin.EXIT_API, err
        assert len(home.requests) == 1
        assert err.strip().splitlines()[-1] == (
            f"error: listing the dataset's metadata fields: GET {home.origin}/v1/datasets/d1/metadata answered with "
            "a redirect to another host (HTTP 307); gcite acl sends the key only to the scheme, host and port of "
            "--base-url and did not follow it: set --base-url / DIFY_BASE_URL to the address that answers"
        )
    else:
        assert code == acl_admin.EXIT_OK, err
        assert len(home.requests) == 3  # the redirect, the metadata where it pointed, the document list
