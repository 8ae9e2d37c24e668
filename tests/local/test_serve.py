"""`gcite serve`: Dify's /e/<hook>/ route played locally, every request through the real plugin process."""

import http.client
import json
import subprocess
import sys
import time

import jwt
import pytest
import requests

from gcite import ROOT
from gcite.local.serve import SAMPLE_USERS, LocalDify


@pytest.fixture(scope="module")
def local():
    server = LocalDify(port=0, pace=0.02, fail_on="模型故障演练").start()
    yield server
    server.close()


def test_sample_users_get_tokens_for_their_roles(local):
    users = requests.get(f"http://127.0.0.1:{local.port}/local/users", timeout=30).json()
    assert [(u["id"], u["roles"]) for u in users] == [(u["id"], u["roles"]) for u in SAMPLE_USERS]
    assert any(not u["roles"] for u in users) and len({tuple(u["roles"]) for u in users}) == len(users)
    for user in users:
        claims = jwt.decode(user["token"], local.secret, algorithms=["HS256"])
        assert (claims["sub"], claims["roles"]) == (user["id"], user["roles"]) and claims["exp"] > 0


def test_each_sample_user_is_offered_example_questions_in_both_languages(local):
    from gcite.local.knowledge import load_json, result_items

    users = requests.get(f"http://127.0.0.1:{local.port}/local/users", timeout=30).json()
    base = load_json("knowledge_base.json")
    for user in users:
        assert set(user["examples"]) == {"zh", "en"} and all(1 <= len(q) <= 3 for q in user["examples"].values())
        for question in user["examples"]["zh"] + user["examples"]["en"]:
            assert result_items(base, question), (user["id"], question)  # the knowledge base has something to cite


def test_page_comes_from_the_plugin_with_its_headers(local):
    response = requests.get(f"{local.base}/gcite/", timeout=30)
    assert response.status_code == 200 and response.text == (ROOT / "endpoints/page/index.html").read_text("utf-8")
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert "frame-ancestors 'self' http://127.0.0.1:" in response.headers["Content-Security-Policy"]
    assert (
        requests.get(f"{local.base}/gcite/gcite.js", timeout=30).headers["Content-Type"].startswith("text/javascript")
    )
    for path in ("/gcite/..%2fpage.py", "/gcite/%2e%2e/%2e%2e/manifest.yaml", "/gcite/page.yaml", "/gcite/chat"):
        response = requests.get(local.base + path, timeout=30)
        assert response.status_code == 404 and b"Endpoint" not in response.content
    assert requests.get(f"http://127.0.0.1:{local.port}/e/wronghookwronghk/gcite/", timeout=30).status_code == 404
    root = requests.get(f"http://127.0.0.1:{local.port}/", allow_redirects=False, timeout=30)
    assert root.status_code == 302 and root.headers["Location"] == f"/e/{local.hook}/gcite/#local"


def test_chat_streams_through_the_plugin_in_pieces(local):
    connection = http.client.HTTPConnection("127.0.0.1", local.port, timeout=60)
    connection.request(
        "POST",
        f"/e/{local.hook}/gcite/chat",
        json.dumps({"query": "巡更时发现异常怎么上报？"}),
        {"Authorization": f"Bearer {local.users[0]['token']}", "Content-Type": "application/json"},
    )
    response = connection.getresponse()
    assert response.status == 200 and response.getheader("Content-Type").startswith("text/event-stream")
    reads = []
    while chunk := response.read1(65536):  # what one socket read returns: the pieces as the server flushed them
        reads.append(chunk)
    connection.close()
    body = b"".join(reads).decode("utf-8")
    assert body.startswith(": open\n\n") and "event: done" in body and "[C:" not in body
    # the text came in many separate pieces (cited_answer sends the model's deltas in batches of at most 80 ms)
    assert sum(b"event: text" in chunk for chunk in reads) >= 5


def test_model_failure_and_bad_token_reach_the_caller_as_errors(local):
    token = local.users[0]["token"]
    body = requests.post(
        f"{local.base}/gcite/chat",
        json={"query": "模型故障演练"},
        timeout=60,
        headers={"Authorization": f"Bearer {token}"},
    ).text
    assert "event: error" in body and "simulated" not in body and "RuntimeError" not in body
    forged = jwt.encode(
        {"sub": "wang", "roles": ["物业经理"], "exp": 2**31},
        "a-forged-secret-of-at-least-32-bytes!!",
        algorithm="HS256",
    )
    response = requests.post(
        f"{local.base}/gcite/chat", json={"query": "巡更"}, timeout=60, headers={"Authorization": f"Bearer {forged}"}
    )
    assert response.status_code == 401


def test_gcite_chat_cli_against_serve(local):
    url = f"{local.base}/gcite/chat"
    done = subprocess.run(
        [sys.executable, "-m", "gcite", "chat", "巡更时发现异常怎么上报？", "--url", url, "--user", "guest", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout)
    assert first["status"] == "cited" and first["conversation"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gcite",
            "chat",
            "会议室怎么预约？",
            "--url",
            url,
            "--user",
            "guest",
            "--conversation",
            first["conversation"],
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "会议室须提前在楼宇小程序预约" in done.stdout and "[1] 会议室使用规范" in done.stdout
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gcite",
            "chat",
            "会议室怎么预约？",
            "--url",
            url,
            "--user",
            "li",
            "--conversation",
            first["conversation"],
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )  # another user's handle
    assert done.returncode == 1 and json.loads(done.stdout)["status"] == "error"


# --- options: each refused in one line before anything starts (issue 14, point 7) ------------------------------


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--port", "99999"], "error: --port must be from 0 to 65535, got 99999"),
        (["--port", "-1"], "error: --port must be from 0 to 65535, got -1"),
        (["--llm-model", "m"], "error: --llm-model needs --llm-base-url"),
        (["--llm-base-url", "http://127.0.0.1:9/v1"], "error: --llm-base-url needs --llm-model"),
        (["--pace", "-1"], "error: --pace must be 0 or more seconds, got -1"),
        (["--pace", "nan"], "error: --pace must be 0 or more seconds, got nan"),
        (
            ["--pace", "0.1", "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"],
            "error: --pace applies to the built-in stand-in model only",
        ),
        (["--fail-on", " "], "error: --fail-on: the text is empty"),
        (
            ["--knowledge-base", "{tmp}/bad.json"],
            "error: --knowledge-base {tmp}/bad.json: not a JSON file "
            "(Expecting property name enclosed in double quotes at line 1, column 2)",
        ),
        (["--knowledge-base", "{tmp}/list.json"], "error: --knowledge-base {tmp}/list.json: not a knowledge base"),
        (
            ["--knowledge-base", "{tmp}/nope.json"],
            "error: --knowledge-base {tmp}/nope.json: cannot read it (No such file or directory)",
        ),
        (["--dsl", "{tmp}/workflow.yml"], "error: {tmp}/workflow.yml: not a chatflow DSL (app.mode is 'workflow'"),
        (["--dsl", "{tmp}/bad.json"], "error: {tmp}/bad.json: not a YAML file ("),
        # --allow-origin: exact origins only, each checked (issue 35, point 3)
        (["--allow-origin", "*"], "error: --allow-origin *: gcite serve takes exact origins only"),
        (
            ["--allow-origin", "localhost:3000"],
            "error: --allow-origin localhost:3000: not an origin; write it as "
            "scheme://host[:port] with no path, e.g. http://localhost:3000",
        ),
        (
            ["--allow-origin", "http://localhost:3000", "--allow-origin", "http://localhost:3000/app"],
            "error: --allow-origin http://localhost:3000/app: not an origin",
        ),
        (["--allow-origin", "http://localhost:99999"], "error: --allow-origin http://localhost:99999: not an origin"),
        (["--allow-origin", "https://*.example.com"], "error: --allow-origin https://*.example.com: not an origin"),
        (
            ["--allow-origin", "http://a.example;script-src *"],
            "error: --allow-origin 'http://a.example;script-src *': not an origin",
        ),
        (["--allow-origin", ""], "error: --allow-origin '': not an origin"),
        # --secret-file: one private line of at least 32 bytes; the secret is never shown
        (
            ["--secret-file", "{tmp}/shared"],
            "error: --secret-file {tmp}/shared: other users may read or change it (mode "
            "644); the secret signs every user's token: make it yours alone with chmod 600 "
            "{tmp}/shared",
        ),
        (
            ["--secret-file", "{tmp}/group"],
            "error: --secret-file {tmp}/group: other users may read or change it (mode 640)",
        ),
        (
            ["--secret-file", "{tmp}/short"],
            "error: --secret-file {tmp}/short: the secret is 12 bytes; the endpoint takes at least 32",
        ),
        (["--secret-file", "{tmp}/empty"], "error: --secret-file {tmp}/empty: the file is empty"),
        (["--secret-file", "{tmp}/two-lines"], "error: --secret-file {tmp}/two-lines: more than one line"),
        (["--secret-file", "{tmp}/binary"], "error: --secret-file {tmp}/binary: not UTF-8 text"),
        (
            ["--secret-file", "{tmp}/nope"],
            "error: --secret-file {tmp}/nope: cannot read it (No such file or directory)",
        ),
        (["--secret-file", "{tmp}"], "error: --secret-file {tmp}: not a file"),
    ],
)
def test_serve_refuses_bad_options_in_one_line(argv, message, tmp_path, capsys):
    from gcite.cli.main import main

    (tmp_path / "bad.json").write_text("{bad\n")
    (tmp_path / "list.json").write_text("[1]")
    (tmp_path / "workflow.yml").write_text("app:\n  mode: workflow\nworkflow:\n  graph: {}\n")
    secret = "s3cr3t-" + "x" * 40
    for name, content, mode in (
        ("shared", secret, 0o644),
        ("group", secret, 0o640),
        ("short", "twelve-bytes", 0o600),
        ("empty", "\n", 0o600),
        ("two-lines", f"{secret}\n{secret}\n", 0o600),
        ("binary", b"\xff" * 40, 0o600),
    ):
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        path.chmod(mode)
    assert main(["serve", *(a.replace("{tmp}", str(tmp_path)) for a in argv)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(message.replace("{tmp}", str(tmp_path))) and captured.err.count("\n") == 1
    assert "Traceback" not in captured.err and captured.out == ""
    assert "s3cr3t" not in captured.err and "twelve" not in captured.err


def test_serve_takes_plugin_or_code_for_dsl():
    from argparse import Namespace

    from gcite.cli.serve import usage_problem

    args = Namespace(
        port=0,
        llm_base_url=None,
        llm_model=None,
        pace=None,
        fail_on=None,
        dsl="code",
        knowledge_base=str(ROOT / "gcite" / "local" / "samples" / "knowledge_base.json"),
    )
    assert usage_problem(args) is None and args.dsl == str(ROOT / "dsl" / "gcite_chatflow_code.yml")


# --- what it answers to (issue 22, points 4 and 13) -----------------------------------------------------------


def raw_request(port, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """(status, body) of one request written byte for byte (a test client would refuse to send some of these)."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode("utf-8") + b"\r\n" + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "evil.example:{port}",
        "127.0.0.1:1",
        "localhost",
        "127.0.0.1",
        "0.0.0.0:{port}",
        "127.0.0.1:{port}.evil.example",
        "[::1]:{port}",
        None,
    ],
)
def test_only_its_own_host_is_answered_so_a_rebinding_page_gets_no_token(local, host):
    tokens = [u["token"] for u in local.users]
    for path in ("/local/users", f"/e/{local.hook}/gcite/", "/"):
        head = f"GET {path} HTTP/1.1\n" + (f"Host: {host.format(port=local.port)}\n" if host else "")
        status, body = raw_request(local.port, head)
        assert status == 421, (host, path)
        assert (
            body.decode() == f"gcite serve answers only http://127.0.0.1:{local.port} and "
            f"http://localhost:{local.port}\n"
        )
        assert not any(t in body.decode() for t in tokens)


def test_its_own_host_by_either_name_is_answered(local):
    for host in (f"127.0.0.1:{local.port}", f"localhost:{local.port}", f"LocalHost:{local.port}"):
        status, body = raw_request(local.port, f"GET /local/users HTTP/1.1\nHost: {host}\n")
        assert status == 200 and [u["id"] for u in json.loads(body)] == [u["id"] for u in SAMPLE_USERS]


def test_the_page_on_localhost_may_call_the_endpoint(local):
    origin = f"http://localhost:{local.port}"  # not in the local allowed_origins: the page's own origin
    response = requests.post(
        f"http://localhost:{local.port}/e/{local.hook}/gcite/chat",
        json={"query": "巡更"},
        headers={"Authorization": f"Bearer {local.users[0]['token']}", "Origin": origin},
        timeout=60,
    )
    assert response.status_code == 200 and "event: done" in response.text
    evil = requests.post(
        f"http://localhost:{local.port}/e/{local.hook}/gcite/chat",
        json={"query": "巡更"},
        headers={"Authorization": f"Bearer {local.users[0]['token']}", "Origin": "http://evil.example"},
        timeout=60,
    )
    assert evil.status_code == 403


@pytest.mark.parametrize(
    "lengths,status",
    [
        (["abc"], 400),
        (["-5"], 400),
        (["1e3"], 400),
        (["٣"], 400),
        (["12", "13"], 400),
        ([str(10**12)], 413),
        ([str(10 * 2**20 + 1)], 413),
    ],
)
def test_a_bad_content_length_is_answered_without_a_traceback(local, lengths, status, capfd):
    head = f"POST /e/{local.hook}/gcite/chat HTTP/1.1\nHost: 127.0.0.1:{local.port}\nContent-Type: application/json\n"
    head += "".join(f"Content-Length: {n}\n" for n in lengths)
    got, body = raw_request(local.port, head, b'{"query": "q"}')
    assert got == status and body.decode().strip()
    assert requests.get(f"http://127.0.0.1:{local.port}/local/users", timeout=30).status_code == 200  # still serving
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out


def test_a_body_shorter_than_its_content_length_is_400_when_the_client_gives_up(local):
    import socket

    with socket.create_connection(("127.0.0.1", local.port), timeout=30) as sock:
        sock.sendall(
            f"POST /e/{local.hook}/gcite/chat HTTP/1.1\r\nHost: 127.0.0.1:{local.port}\r\n"
            'Content-Length: 100\r\n\r\n{"query"'.encode()
        )
        sock.shutdown(socket.SHUT_WR)
        data = sock.recv(65536)
    assert data.startswith(b"HTTP/1.0 400 ")


def test_a_client_that_stops_sending_is_dropped_without_a_traceback(local, monkeypatch, capfd):
    import socket

    from gcite.local import serve

    assert serve._Handler.timeout == serve.READ_TIMEOUT
    monkeypatch.setattr(serve._Handler, "timeout", 1.0)
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", local.port), timeout=30) as sock:
        sock.sendall(
            f"POST /e/{local.hook}/gcite/chat HTTP/1.1\r\nHost: 127.0.0.1:{local.port}\r\n"
            'Content-Length: 100\r\n\r\n{"query"'.encode()
        )
        assert sock.recv(65536) == b""  # closed by the server, the client still holding its end open
    assert time.monotonic() - started < 5
    time.sleep(0.2)
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err + captured.out


# --- an app on another origin, and a fixed secret (issue 35, point 3) ------------------------------------------

APP = "http://localhost:3000"  # a front end in development, on another port


def preflight(url, origin):
    return requests.options(
        url,
        timeout=30,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization,content-type",
        },
    )


def test_an_app_on_another_origin_is_refused_without_allow_origin(local):
    url = f"{local.base}/gcite/chat"
    assert preflight(url, APP).status_code == 403
    before = len(local.app.conversations)
    response = requests.post(
        url,
        json={"query": "巡更"},
        timeout=60,
        headers={"Authorization": f"Bearer {local.users[0]['token']}", "Origin": APP},
    )
    assert response.status_code == 403 and response.json()["code"] == "origin_not_allowed"
    assert "Access-Control-Allow-Origin" not in response.headers and len(local.app.conversations) == before
    users = requests.get(f"http://127.0.0.1:{local.port}/local/users", headers={"Origin": APP}, timeout=30)
    assert "Access-Control-Allow-Origin" not in users.headers  # its page cannot read the sample tokens either


def test_allow_origin_admits_that_app_and_a_fixed_secret_signs_the_docs_tokens(tmp_path):
    """`gcite serve --allow-origin http://localhost:3000 --secret-file FILE`: the app's preflight and stream are
    answered with its origin, its page may read /local/users, any other origin is still refused; a token minted with
    the docs' recipe (endpoint.md) and the secret from the file is taken, and the hook comes from the secret."""
    from gcite.local.serve import hook_of
    from tests.support.serve_process import gcite_serve, private_secret_file

    secret = "a-fixed-local-development-secret-of-48-bytes-...."
    with gcite_serve(
        "--pace",
        "0",
        "--allow-origin",
        APP,
        "--allow-origin",
        "HTTP://127.0.0.1:5173/",
        "--secret-file",
        str(private_secret_file(tmp_path, secret)),
    ) as served:
        assert served["base"].endswith(f"/e/{hook_of(secret)}")
        assert f"other origins: {APP} http://127.0.0.1:5173 may call the endpoint" in "\n".join(served["lines"])
        assert secret not in "\n".join(served["lines"])
        url = served["chat"]
        answered = preflight(url, APP)
        assert answered.status_code == 204 and answered.headers["Access-Control-Allow-Origin"] == APP
        assert "Authorization" in answered.headers["Access-Control-Allow-Headers"]
        assert preflight(url, "http://127.0.0.1:5173").status_code == 204
        assert preflight(url, "http://localhost:3001").status_code == 403  # exact origins: another port is another

        claims = {"sub": "dev-user", "roles": ["物业经理"], "exp": int(time.time()) + 900}  # the docs' recipe
        token = jwt.encode(claims, (tmp_path / "gcite-secret").read_text(encoding="utf-8").strip(), algorithm="HS256")
        response = requests.post(
            url,
            json={"query": "巡更时发现异常怎么上报？"},
            timeout=120,
            headers={"Authorization": f"Bearer {token}", "Origin": APP},
        )
        assert response.status_code == 200 and response.headers["Access-Control-Allow-Origin"] == APP
        assert (
            response.text.startswith(": open")
            and "event: done" in response.text
            and '"status":"cited"' in response.text
        )

        page = requests.get(served["page"].split("#")[0], timeout=30)  # and it may frame the page (#parent=)
        assert page.headers["Content-Security-Policy"].endswith(
            f"frame-ancestors 'self' {served['origin']} {APP} http://127.0.0.1:5173"
        )

        users = requests.get(f"{served['origin']}/local/users", headers={"Origin": APP}, timeout=30)
        assert users.headers["Access-Control-Allow-Origin"] == APP
        for user in users.json():
            assert jwt.decode(user["token"], secret, algorithms=["HS256"])["sub"] == user["id"]
        other = requests.get(f"{served['origin']}/local/users", headers={"Origin": "http://evil.example"}, timeout=30)
        assert "Access-Control-Allow-Origin" not in other.headers
