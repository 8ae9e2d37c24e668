"""A test's own OpenAI-compatible model: a chat-completions handler that streams the same answer to every request."""

import json
from http.server import BaseHTTPRequestHandler


def streaming_model(pieces: list[str], requests: list[dict]) -> type[BaseHTTPRequestHandler]:
    """A handler (serve it with tests/support/local_http.py) answering each POST with `pieces` as SSE deltas and
    `[DONE]`; each request's JSON body, with its Authorization header as `_authorization`, goes into `requests`."""

    class Model(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append({**body, "_authorization": self.headers.get("Authorization")})
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for piece in pieces:
                self.wfile.write(f"data: {json.dumps({'choices': [{'delta': {'content': piece}}]})}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

        def log_message(self, *args):
            pass

    return Model
