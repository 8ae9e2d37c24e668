"""The chat endpoint against a hostile or odd client (issue 22, points 9 and 11), through the real plugin process:
the page's own origin is allowed and another site's is not, whatever it claims; a body too deep, a lone surrogate,
a string `exp` or an empty `aud` are refused before any app call."""

import json
import sys
import time

import pytest

from gcite.local.plugin_process import PluginProcess
from tests.support import ROOT
from tests.support.endpoint import SETTINGS, Canned, dify_stream, events_of, post, raw_token, token

DIFY = "https://dify.example.com"
HOOK = "abcdefghijklmnop"


@pytest.fixture(scope="module")
def plugin():
    with PluginProcess(ROOT, sys.executable) as process:
        yield process


def ask(plugin, headers, host="dify.example.com", settings=SETTINGS):
    """A question as the daemon hands it over for `<host>/e/<hook>/gcite/chat`; (status, code or None, canned)."""
    canned = Canned(dify_stream(["ok"], []))
    call = plugin.request(
        "POST",
        "/gcite/chat",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token()}", **headers},
        body=json.dumps({"query": "会议室怎么预约？"}),
        settings=settings,
        app_handler=canned,
        host=host,
        hook_id=HOOK,
    )
    status = call.wait_head()
    if status == 200:
        assert events_of(call)[-1][0] == "done"
        return status, None, canned, call
    return status, json.loads(call.read())["code"], canned, call


# --- 9. the page's own origin -----------------------------------------------------------------------------------


def test_the_page_served_by_dify_may_call_its_endpoint_without_being_in_allowed_origins(plugin):
    assert DIFY not in SETTINGS["allowed_origins"]
    # Dify's nginx: `proxy_set_header Dify-Hook-Url $scheme://$host$request_uri` (docker/nginx/conf.d/default.conf)
    status, _, canned, call = ask(plugin, {"Origin": DIFY, "Dify-Hook-Url": f"{DIFY}/e/{HOOK}/gcite/chat"})
    assert status == 200 and len(canned.requests) == 1
    assert call.headers["Access-Control-Allow-Origin"] == DIFY
    # no nginx in front: the daemon builds Dify-Hook-Url from Host (here http, a port kept)
    status, _, _, _ = ask(plugin, {"Origin": "http://10.0.0.5:8080"}, host="10.0.0.5:8080")
    assert status == 200
    # the default port written out in Host is the same origin
    status, _, _, _ = ask(plugin, {"Origin": DIFY, "Dify-Hook-Url": f"{DIFY}:443/e/{HOOK}/gcite/chat"})
    assert status == 200


def test_the_browser_saying_same_origin_is_the_pages_own_origin(plugin):
    # Dify's nginx writes $host without the port: http://localhost:8080 arrives as http://localhost
    headers = {"Origin": "http://localhost:8080", "Dify-Hook-Url": f"http://localhost/e/{HOOK}/gcite/chat"}
    assert ask(plugin, headers, host="localhost")[:2] == (403, "origin_not_allowed")
    status, _, _, _ = ask(plugin, {**headers, "Sec-Fetch-Site": "same-origin"}, host="localhost")
    assert status == 200


@pytest.mark.parametrize(
    "origin,extra",
    [
        ("https://evil.example.net", {}),
        ("https://evil.example.net", {"Sec-Fetch-Site": "cross-site"}),
        ("https://sub.dify.example.com", {"Sec-Fetch-Site": "same-site"}),
        ("http://dify.example.com", {}),  # another scheme
        ("https://dify.example.com:8443", {}),  # another port
        ("https://dify.example.com.evil.example", {}),
        ("null", {}),
    ],
)
def test_another_sites_page_is_refused_before_any_app_call(plugin, origin, extra):
    headers = {"Origin": origin, "Dify-Hook-Url": f"{DIFY}/e/{HOOK}/gcite/chat", **extra}
    status, code, canned, call = ask(plugin, headers)
    assert (status, code) == (403, "origin_not_allowed") and canned.requests == []
    assert not any(h.startswith("Access-Control") for h in call.headers)


def test_a_malformed_allowed_origins_is_a_setting_error_naming_it(plugin):
    settings = {**SETTINGS, "allowed_origins": "https://chat.example.com, http://*"}
    status, code, canned, _ = ask(plugin, {"Origin": "https://chat.example.com"}, settings=settings)
    assert (status, code) == (500, "not_configured") and canned.requests == []
    deadline = time.monotonic() + 10
    while not any("setting allowed_origins: http://* is not an origin" in json.dumps(log) for log in plugin.logs):
        assert time.monotonic() < deadline, plugin.logs[-3:]
        time.sleep(0.05)


# --- 11. what a client may send -----------------------------------------------------------------------------------


def test_a_body_nested_thousands_deep_is_400_not_500(plugin):
    body = '{"query": "q", "extra": ' + '{"a": ' * 3000 + "1" + "}" * 3000 + "}"
    assert 20_000 < len(body) < 64 * 1024
    canned = Canned([])
    for raw in (body, "[" * 30_000 + "]" * 30_000):
        call = post(plugin, raw, bearer=token(), handler=canned)
        assert call.wait_head() == 400 and json.loads(call.read())["code"] == "bad_request"
    assert canned.requests == [] and plugin.alive


@pytest.mark.parametrize("query", ["\\ud800", "巡更\\udfff", "a\\ud83d", "\\ude00b"])
def test_a_query_with_a_lone_surrogate_is_400_before_the_app_is_called(plugin, query):
    canned = Canned(dify_stream(["ok"], []))
    call = post(plugin, '{"query": "' + query + '"}', bearer=token(), handler=canned)
    assert call.wait_head() == 400 and json.loads(call.read())["code"] == "bad_request"
    assert canned.requests == [] and call.app_requests == []
    # a pair is text: the emoji 😀 written as its two escapes is a question like any other
    call = post(plugin, '{"query": "\\ud83d\\ude00 会议室"}', bearer=token(), handler=canned)
    assert call.wait_head() == 200 and events_of(call)[-1][0] == "done"


def claims(**changes):
    base = {"sub": "alice", "roles": ["前台"], "exp": int(time.time()) + 600}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


@pytest.mark.parametrize(
    "payload",
    [
        claims(exp=str(int(time.time()) + 600)),
        claims(exp=True),
        claims(exp=[int(time.time()) + 600]),
        claims(nbf=str(int(time.time()) - 10)),
        claims(aud=[]),
        claims(aud=""),
    ],
    ids=["exp-string", "exp-bool", "exp-list", "nbf-string", "aud-empty-list", "aud-empty-string"],
)
@pytest.mark.parametrize("audience", [None, "gcite-chat"])
def test_claims_of_the_wrong_type_are_401(plugin, payload, audience):
    settings = {**SETTINGS, "jwt_audience": audience} if audience else SETTINGS
    canned = Canned(dify_stream(["ok"], []))
    call = post(plugin, {"query": "q"}, bearer=raw_token(payload), handler=canned, settings=settings)
    expected = ("invalid_token", "expired_token") if payload["exp"] is True else ("invalid_token",)  # True == 1
    assert call.wait_head() == 401 and json.loads(call.read())["code"] in expected
    assert canned.requests == []


def test_a_float_exp_and_a_listed_audience_are_still_accepted(plugin):
    settings = {**SETTINGS, "jwt_audience": "gcite-chat"}
    for payload, used in ((claims(exp=time.time() + 600.5), SETTINGS), (claims(aud=["other", "gcite-chat"]), settings)):
        call = post(
            plugin, {"query": "q"}, bearer=raw_token(payload), handler=Canned(dify_stream(["ok"], [])), settings=used
        )
        assert call.wait_head() == 200 and events_of(call)[-1][0] == "done"


# --- issue 34, item 11: a lone surrogate in a signed claim ----------------------------------------------------------


@pytest.mark.parametrize("claims", [{"sub": "al\ud800ice"}, {"roles": ["前台", "x\udfffy"]}])
def test_a_valid_token_whose_sub_or_role_holds_a_lone_surrogate_is_401(plugin, claims):
    payload = {"sub": "alice", "roles": ["前台"], "exp": int(time.time()) + 600, **claims}
    canned = Canned(dify_stream(["ok"], []))
    call = post(plugin, {"query": "会议室怎么预约？"}, bearer=raw_token(payload), handler=canned)
    assert call.wait_head() == 401 and json.loads(call.read())["code"] == "invalid_token"
    assert canned.requests == []
    assert not [log for log in plugin.logs if log.get("level") == "ERROR"]
