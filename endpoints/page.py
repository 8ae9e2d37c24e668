"""`GET /gcite/` and `GET /gcite/<path:asset>`: the reference chat page, served by the plugin from endpoints/page/.

Only the page's files are served, looked up by exact name (no path is ever joined from the request): the three of
endpoints/page/ and `gcite-client.js`, the stream client the page imports, which is the JS client module of
clients/js/ (the file an app installs as @gcite/client; one copy, shipped in the plugin for the page). Each goes
with its content type and headers that keep the page safe: a Content-Security-Policy that allows only the page's own
script, style and requests (`connect-src 'self'` is the chat endpoint beside it), no inline script, no framing except
by the endpoint's allowed origins, `nosniff` and no referrer.
"""

from collections.abc import Mapping
from pathlib import Path

from dify_plugin import Endpoint
from werkzeug import Request, Response

from endpoints.settings import SettingError, allowed_origins, is_origin, logger

PAGE_DIR = Path(__file__).resolve().parent / "page"
CLIENT = Path(__file__).resolve().parent.parent / "clients" / "js" / "gcite-client.js"
FILES = {  # name in the URL: (file, content type)
    "index.html": (PAGE_DIR / "index.html", "text/html; charset=utf-8"),
    "gcite.css": (PAGE_DIR / "gcite.css", "text/css; charset=utf-8"),
    "gcite.js": (PAGE_DIR / "gcite.js", "text/javascript; charset=utf-8"),
    "gcite-client.js": (CLIENT, "text/javascript; charset=utf-8"),
}


def frame_ancestors(settings: Mapping) -> str:
    """`'self'` plus each allowed origin (the chat endpoint's rule: the same setting read the same way, every entry a
    well-formed scheme://host[:port]); `*` in the setting is not honoured here. A malformed setting frames nothing
    but `'self'`, and its message, naming the setting, goes to the plugin's log."""
    try:
        origins = allowed_origins(settings)
    except SettingError as error:
        logger.warning("gcite page: %s; the page may be framed only by itself", error)
        origins = []
    return " ".join(["'self'", *(o for o in origins if is_origin(o))])


def security_headers(settings: Mapping) -> dict[str, str]:
    return {
        "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; "
        f"frame-ancestors {frame_ancestors(settings)}",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-cache",
    }


class GCitePageEndpoint(Endpoint):
    def _invoke(self, r: Request, values: Mapping, settings: Mapping) -> Response:
        name = values.get("asset") or "index.html"
        headers = security_headers(settings)
        if name not in FILES:
            return Response("not found\n", status=404, content_type="text/plain; charset=utf-8", headers=headers)
        path, content_type = FILES[name]
        try:
            body = path.read_bytes()
        except OSError:
            return Response("not found\n", status=404, content_type="text/plain; charset=utf-8", headers=headers)
        return Response(body, status=200, content_type=content_type, headers=headers)
