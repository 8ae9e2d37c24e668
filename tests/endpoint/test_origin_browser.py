"""Issue 22, point 9, in a real browser (Debian's chromium through Playwright) against `gcite serve`: Chromium sends
`Origin` on the page's same-origin POST, and the page's own origin is allowed without being in `allowed_origins`;
a page on another origin sending the same request is refused before any app call."""

import os
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from gcite.local.serve import LocalDify
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.local_http import origin, start_server, stop_server

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists() and not os.environ.get("CI"),
        reason="Debian's chromium is not installed (make test installs it; in CI this fails)",
    ),
]

ASK = """async ([url, token, type]) => {
  const headers = {"Content-Type": type};
  if (token) headers.Authorization = "Bearer " + token;
  try {
    const response = await fetch(url, {method: "POST", headers,
                                       body: JSON.stringify({query: "巡更时发现异常怎么上报？"})});
    return {status: response.status, text: await response.text()};
  } catch (error) {
    return {status: 0, text: String(error)};
  }
}"""


@pytest.fixture(scope="module")
def local():
    server = LocalDify(port=0, pace=0).start()
    yield server
    server.close()


@pytest.fixture(scope="module")
def elsewhere():
    """Another site: a blank page on another port of 127.0.0.1."""

    class Blank(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = b"<!doctype html><title>elsewhere</title>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = start_server(Blank)
    yield f"{origin(server)}/"
    stop_server(server)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def chat_requests(page):
    seen = []
    page.on("request", lambda r: seen.append(r.all_headers()) if r.url.endswith("/gcite/chat") else None)
    return seen


def test_the_page_on_its_own_origin_may_ask_though_not_in_allowed_origins(local, browser):
    own = f"http://localhost:{local.port}"
    assert own not in local.settings["allowed_origins"]
    page = browser.new_page()
    seen = chat_requests(page)
    page.goto(f"{own}/e/{local.hook}/gcite/")
    answer = page.evaluate(ASK, ["chat", local.users[0]["token"], "application/json"])
    assert answer["status"] == 200 and "event: done" in answer["text"], answer
    assert seen[0]["origin"] == own  # Chromium sends Origin on a same-origin POST: the reason for point 9
    assert seen[0]["sec-fetch-site"] == "same-origin"
    page.close()


def test_another_origins_page_is_refused(local, browser, elsewhere):
    page = browser.new_page()
    page.goto(elsewhere)
    url = f"http://localhost:{local.port}/e/{local.hook}/gcite/chat"
    before = len(local.app.conversations)
    # the token makes it a request with a preflight; the preflight from another origin is refused (403)
    answer = page.evaluate(ASK, [url, local.users[0]["token"], "application/json"])
    assert answer == {"status": 0, "text": "TypeError: Failed to fetch"}
    assert len(local.app.conversations) == before  # the app was never called
    page.close()


# --- an app on another origin, through the JS client (issue 35, points 2 and 3) --------------------------------

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "js" / "gcite-client.js"
ASK_WITH_CLIENT = """async ([url, users]) => {
  const { Chat } = await import("/gcite-client.js");
  let token;
  try {
    token = (await (await fetch(users)).json()).find((u) => u.id === "wang").token;
  } catch (error) {
    return {users: String(error)};
  }
  const events = [];
  const result = await new Chat({ url, token }).ask("巡更时发现异常怎么上报？",
                                                    { onEvent: (e) => events.push(e.event) });
  return {users: "read", result, events};
}"""


@pytest.fixture(scope="module")
def app():
    """An app in development: its own origin (another port of 127.0.0.1), serving a blank page and the client
    module as an app that installed @gcite/client would."""

    class App(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path == "/gcite-client.js":
                body, kind = CLIENT.read_bytes(), "text/javascript; charset=utf-8"
            else:
                body, kind = b"<!doctype html><title>an app</title>", "text/html"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = start_server(App)
    yield origin(server)
    stop_server(server)


def test_an_app_on_another_origin_asks_through_the_js_client_once_its_origin_is_allowed(local, browser, app):
    allowed = LocalDify(port=0, pace=0, allow_origins=[app]).start()
    try:
        page = browser.new_page()
        page.goto(f"{app}/")
        answer = page.evaluate(
            ASK_WITH_CLIENT, [f"{allowed.base}/gcite/chat", f"http://127.0.0.1:{allowed.port}/local/users"]
        )
        assert answer["users"] == "read"  # /local/users answers the allowed origin (CORS)
        result = answer["result"]
        assert result["status"] == "cited" and "[1]" in result["answer"], result
        assert answer["events"][0] == "ready" and answer["events"][-1] == "done"
        assert answer["events"].index("sources") < answer["events"].index("text")

        # the same app, against a gcite serve that was not given its origin: refused, the sample tokens unread
        before = len(local.app.conversations)
        refused = page.evaluate(
            ASK_WITH_CLIENT, [f"{local.base}/gcite/chat", f"http://127.0.0.1:{local.port}/local/users"]
        )
        assert refused == {"users": "TypeError: Failed to fetch"}
        token = local.users[0]["token"]
        refused = page.evaluate(
            """async ([url, token]) => {
          const { Chat } = await import("/gcite-client.js");
          return new Chat({ url, token }).ask("巡更时发现异常怎么上报？");
        }""",
            [f"{local.base}/gcite/chat", token],
        )
        assert refused["status"] == "error" and refused["error"]["code"] == "connection", refused
        assert len(local.app.conversations) == before  # the preflight was refused: the app was never called
        page.close()
    finally:
        allowed.close()
