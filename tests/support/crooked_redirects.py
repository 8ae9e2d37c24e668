"""Redirect targets that URL parsers read differently (issue 34, point 1), and the two servers on 127.0.0.1 that
test them: HOME answers its first request with a redirect to one of them, AWAY records anything that reaches it.

Each form names the redirect's `Location` with {home} = 127.0.0.1:HOME_PORT, {away} = 127.0.0.1:AWAY_PORT and the
two ports, and whether the redirect is followed: only when the HTTP library connects the target to HOME's own
scheme, host and port. "refuse" forms include the ones a second parse (urllib's `urlsplit`) reads as HOME while the
library connects to AWAY, and other names for the same machine (`localhost`, `[::1]`, `127.0.0.1.`), which are not
the configured host either."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from tests.support.local_http import start_server, stop_server


@dataclass(frozen=True)
class Form:
    name: str
    template: str
    expected: str  # "follow" | "refuse"

    def location(self, home_port: int, away_port: int) -> str:
        return self.template.format(
            home=f"127.0.0.1:{home_port}", away=f"127.0.0.1:{away_port}", hport=home_port, aport=away_port
        )


FORMS = [
    # backslashes: the library reads `\` as the end of the authority, urlsplit does not
    Form("backslash-before-at-to-away", "http://{away}\\@{home}/moved", "refuse"),
    Form("backslash-before-at-to-home", "http://{home}\\@{away}/moved", "follow"),
    Form("two-backslashes-before-at", "http://{away}\\\\@{home}/moved", "refuse"),
    Form("backslashes-for-slashes", "http:\\\\{away}/moved", "follow"),  # a path on HOME for the library
    Form("leading-backslashes", "\\\\{away}/moved", "follow"),
    Form("slash-backslash", "/\\{away}/moved", "follow"),
    # `@`: userinfo before the host
    Form("userinfo-then-away", "http://{home}@{away}/moved", "refuse"),
    Form("userinfo-then-home", "http://{away}@{home}/moved", "follow"),
    Form("encoded-slash-in-userinfo", "http://{home}%2f@{away}/moved", "refuse"),
    Form("fragment-hides-at", "http://{home}#@{away}/moved", "follow"),
    # tabs (removed by both parsers, wherever they are)
    Form("tab-before-at", "http://{home}\t@{away}/moved", "refuse"),
    Form("tab-after-port", "http://{away}\t/moved", "refuse"),
    Form("tab-in-scheme", "ht\ttp://{away}/moved", "refuse"),
    # percent-encoded hosts: the library decodes them, urlsplit does not
    Form("percent-encoded-host-to-away", "http://%31%32%37.0.0.1:{aport}/moved", "refuse"),
    Form("percent-encoded-host-to-home", "http://%31%32%37.0.0.1:{hport}/moved", "follow"),
    Form("percent-encoded-colon", "http://127.0.0.1%3A{aport}/moved", "refuse"),
    # Unicode hosts
    Form("fullwidth-digits", "http://１２７.０.０.１:{aport}/moved", "refuse"),
    Form("ideographic-full-stops", "http://127。0。0。1:{aport}/moved", "refuse"),
    Form("fullwidth-localhost", "http://ｌｏｃａｌｈｏｓｔ:{hport}/moved", "refuse"),
    Form("cyrillic-o-in-localhost", "http://lоcalhost:{hport}/moved", "refuse"),
    Form("another-name-for-home", "http://localhost:{hport}/moved", "refuse"),
    Form("trailing-dot", "http://127.0.0.1.:{hport}/moved", "refuse"),
    Form("decimal-address", "http://2130706433:{hport}/moved", "refuse"),
    Form("uppercase-scheme-and-host", "HTTP://127.0.0.1:{hport}/moved", "follow"),
    # IPv6
    Form("ipv6-loopback", "http://[::1]:{hport}/moved", "refuse"),
    Form("ipv4-mapped-ipv6", "http://[::ffff:127.0.0.1]:{hport}/moved", "refuse"),
    # ports and schemes
    Form("leading-zero-port", "http://127.0.0.1:0{hport}/moved", "follow"),
    Form("two-ports", "http://127.0.0.1:{hport}:{aport}/moved", "refuse"),
    Form("plus-sign-port", "http://127.0.0.1:+{aport}/moved", "refuse"),
    Form("space-after-port", "http://127.0.0.1:{aport} /moved", "refuse"),
    Form("default-port", "http://127.0.0.1/moved", "refuse"),
    Form("https-same-host-and-port", "https://127.0.0.1:{hport}/moved", "refuse"),
    Form("scheme-relative-to-away", "//{away}/moved", "refuse"),
    Form("relative-path", "/moved?page=2", "follow"),
]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]


class Recorder:
    """A server on 127.0.0.1 that records every request; `redirect(path)` gives a Location to answer 307 with
    (None: answer `answer(path)` as JSON with 200)."""

    def __init__(self, answer: Callable[[str], Any], redirect: Callable[[str], str | None] = lambda path: None):
        self.answer, self.redirect, self.requests = answer, redirect, []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def handle_one(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                recorder.requests.append(Seen(self.command, self.path, dict(self.headers.items())))
                location = recorder.redirect(urlsplit(self.path).path)
                if location is not None:  # raw bytes: a Location may hold UTF-8 and tabs
                    head = (
                        b"HTTP/1.1 307 Temporary Redirect\r\nLocation: "
                        + location.encode("utf-8")
                        + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    )
                    self.wfile.write(head)
                    return
                body = json.dumps(recorder.answer(urlsplit(self.path).path)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = handle_one

        self.server = start_server(Handler)
        self.port = self.server.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        stop_server(self.server)

    def hosts(self) -> set[str]:
        return {seen.headers.get("Host", "") for seen in self.requests}
