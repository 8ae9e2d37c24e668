"""`POST /gcite/chat` (and its CORS preflight `OPTIONS /gcite/chat`): a cited answer from the configured chatflow,
streamed in the G-Cite protocol (`endpoints/chat_protocol.py`) to a caller holding a token the operator signed.

What it trusts: only a JWT (HS256, signed with the endpoint's token secret) carrying `sub`, `roles` (a list of
strings) and `exp`. The roles reach the chatflow only from a valid token, as its `user_roles` input; the body gives
the question and, to continue a conversation, the handle the endpoint returned, which is signed and bound to `sub`.
What it sends: only the protocol's events; no node's inputs or outputs except the chunk list's whitelisted fields
and the answer's text, no internal error text (that goes to the plugin's log).
"""

import base64
import hashlib
import hmac
import json
import re
from collections.abc import Iterator, Mapping
from urllib.parse import urlsplit

import jwt
from dify_plugin import Endpoint
from werkzeug import Request, Response

from citations.answer_layout import machine_inputs
from citations.dify_inputs import has_lone_surrogate
from citations.support import check as support_check
from endpoints.chat_protocol import INTERNAL_ERROR, OPEN_COMMENT, Translator, error_event, gcite_sse, translate
from endpoints.settings import Config, SettingError, logger, normal_origin, read_settings
from tools.validate_citations import check_off_loop, off_loop

# The support check at an answer's end is CPU-bound: it runs in a real OS thread (gevent's pool), so one long or
# hostile answer never holds the loop that serves every other caller's stream (issue 34, item 3).
support_check.run_elsewhere = check_off_loop

MAX_BODY_BYTES = 64 * 1024
MAX_QUERY_CHARS = 4000
MAX_TOKEN_CHARS = 8192
MAX_SUB_CHARS = 256
MAX_ROLES = 50
MAX_ROLE_CHARS = 200
MAX_HANDLE_CHARS = 300
CONVERSATION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
ALGORITHM = "HS256"
CORS_HEADERS = {
    "Access-Control-Allow-Methods": "POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type",
    "Access-Control-Max-Age": "600",
}
STREAM_HEADERS = {"Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"}

MESSAGES = {
    "not_configured": "The chat endpoint is not configured yet. 聊天端点尚未配置完成。",
    "origin_not_allowed": "This site may not use the chat endpoint. 此网站无权使用聊天端点。",
    "missing_token": "Sign in first: the request has no bearer token. 请先登录：请求中没有令牌。",
    "expired_token": "Your session has expired; sign in again. 登录已过期，请重新登录。",
    "invalid_token": "The sign-in token is not valid. 登录令牌无效。",
    "bad_request": "The request is not a valid question. 请求不是有效的提问。",
    "query_too_long": f"The question is too long: at most {MAX_QUERY_CHARS:,} characters. "
    f"问题太长：最多 {MAX_QUERY_CHARS} 个字符。",
    "forbidden": "This conversation cannot be continued with your sign-in. 无法以当前登录身份继续该对话。",
    INTERNAL_ERROR: "Something went wrong while answering. 回答时出现了错误。",
}


class HttpError(Exception):
    def __init__(self, status: int, code: str, detail: str = "") -> None:
        super().__init__(detail or code)
        self.status, self.code, self.detail = status, code, detail


# --- who is calling -------------------------------------------------------------------------------------------


def caller(authorization: str | None, config: Config) -> tuple[str, list[str]]:
    """(sub, roles) of a valid bearer token; anything else raises HttpError(401)."""
    if not authorization or not authorization.strip():
        raise HttpError(401, "missing_token")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_CHARS:
        raise HttpError(401, "invalid_token", "not a bearer token")
    try:
        claims = jwt.decode(
            token,
            config.secret,
            algorithms=[ALGORITHM],
            audience=config.audience,
            options={"require": ["sub", "exp", "roles"]},
        )
    except jwt.ExpiredSignatureError:
        raise HttpError(401, "expired_token", "token expired") from None
    except jwt.PyJWTError as error:
        raise HttpError(401, "invalid_token", f"{type(error).__name__}") from None
    for name in ("exp", "nbf", "iat"):  # NumericDate (RFC 7519 §2): PyJWT would read "1796119130" as a date
        if name in claims and (isinstance(claims[name], bool) or not isinstance(claims[name], (int, float))):
            raise HttpError(401, "invalid_token", f"{name} is not a number")
    if "aud" in claims and not claims["aud"]:  # PyJWT lets an empty audience through when none is configured
        raise HttpError(401, "invalid_token", "aud is empty")
    sub, roles = claims.get("sub"), claims.get("roles")
    # a lone surrogate (`"\ud800"` in the token's JSON) is no text: the app invocation could not carry it (issue 34)
    if not isinstance(sub, str) or not sub.strip() or len(sub) > MAX_SUB_CHARS or has_lone_surrogate(sub):
        raise HttpError(401, "invalid_token", "sub is not a user id")
    if (
        not isinstance(roles, list)
        or len(roles) > MAX_ROLES
        or not all(
            isinstance(r, str) and r.strip() and len(r) <= MAX_ROLE_CHARS and not has_lone_surrogate(r) for r in roles
        )
    ):
        raise HttpError(401, "invalid_token", "roles is not a list of role names")
    return sub, [r.strip() for r in roles]


# --- conversation handles -------------------------------------------------------------------------------------


def _handle_key(secret: bytes) -> bytes:
    return hmac.new(secret, b"gcite conversation handle v1", hashlib.sha256).digest()


def _mac(secret: bytes, sub: str, conversation_id: str) -> str:
    message = json.dumps([sub, conversation_id], ensure_ascii=False).encode("utf-8")
    digest = hmac.new(_handle_key(secret), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def make_handle(secret: bytes, sub: str, conversation_id: str) -> str:
    """`<conversation_id>.<HMAC(sub, conversation_id)>`: only the same `sub` can continue the conversation."""
    return f"{conversation_id}.{_mac(secret, sub, conversation_id)}"


def open_handle(secret: bytes, sub: str, handle: str) -> str:
    """The conversation id of a handle made for `sub`; another caller's or a forged handle raises HttpError(403)."""
    conversation_id, dot, mac = handle.rpartition(".")
    if not dot or len(handle) > MAX_HANDLE_CHARS or not CONVERSATION_ID.fullmatch(conversation_id):
        raise HttpError(403, "forbidden", "malformed handle")
    if not hmac.compare_digest(mac.encode("ascii", "replace"), _mac(secret, sub, conversation_id).encode("ascii")):
        raise HttpError(403, "forbidden", "handle not made for this caller")
    return conversation_id


# --- the request body -----------------------------------------------------------------------------------------


def question(r: Request) -> tuple[str, str | None]:
    """(query, handle or None) from the JSON body; anything else raises HttpError(400). Other keys are ignored."""
    raw = r.get_data(cache=False)
    if len(raw) > MAX_BODY_BYTES:
        raise HttpError(400, "bad_request", f"body over {MAX_BODY_BYTES} bytes")
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise HttpError(400, "bad_request", "body is not JSON") from None
    except RecursionError:  # 22 KB of `[` is enough
        raise HttpError(400, "bad_request", "body is nested too deeply") from None
    if not isinstance(body, dict):
        raise HttpError(400, "bad_request", "body is not a JSON object")
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise HttpError(400, "bad_request", "query: missing or empty")
    if len(query) > MAX_QUERY_CHARS:
        raise HttpError(400, "query_too_long", f"query: over {MAX_QUERY_CHARS} characters")
    if has_lone_surrogate(query):  # `"\ud800"` in JSON: not text, and the app invocation cannot carry it
        raise HttpError(400, "bad_request", "query: holds a lone surrogate")
    handle = body.get("conversation")
    if handle in (None, ""):
        return query, None
    if not isinstance(handle, str):
        raise HttpError(400, "bad_request", "conversation: expected the handle text")
    return query, handle


# --- responses ------------------------------------------------------------------------------------------------


def json_response(status: int, code: str, headers: Mapping[str, str]) -> Response:
    body = json.dumps({"code": code, "message": MESSAGES.get(code, MESSAGES[INTERNAL_ERROR])}, ensure_ascii=False)
    return Response(body, status=status, headers=dict(headers), content_type="application/json; charset=utf-8")


def own_origin(r: Request) -> str | None:
    """The origin this request was addressed to, as Dify tells the plugin in `Dify-Hook-Url`: Dify's nginx sets it
    to `$scheme://$host$request_uri` for `/e/`, and the daemon, when nothing set it, to the request's scheme and
    `Host` (dify-plugin-daemon internal/service/endpoint.go, copyRequest). A browser sets `Host` itself, and a page
    cannot send `Dify-Hook-Url` to another site without a preflight, which names neither that header nor its
    origin: a page elsewhere cannot make its own origin look like this one."""
    try:
        parts = urlsplit(r.headers.get("Dify-Hook-Url", "").strip())
        return normal_origin(f"{parts.scheme}://{parts.netloc}") if parts.scheme and parts.netloc else None
    except ValueError:
        return None


def origin_allowed(r: Request, config: Config, origin: str) -> bool:
    """An origin in `allowed_origins`, or the page's own: Chromium sends `Origin` on a same-origin POST, so the page
    Dify serves beside this endpoint is allowed without its address in the setting. Its own = the browser says
    `Sec-Fetch-Site: same-origin` (a header no page can set), or `Origin` is the address the request was sent to."""
    if config.origin_allowed(origin):
        return True
    if r.headers.get("Sec-Fetch-Site", "").strip().lower() == "same-origin":
        return True
    own = own_origin(r)
    return own is not None and normal_origin(origin) == own


def cors_headers(r: Request, config: Config | None) -> dict[str, str]:
    origin = r.headers.get("Origin")
    if not origin or config is None or not origin_allowed(r, config, origin):
        return {}
    return {"Access-Control-Allow-Origin": origin.strip(), "Vary": "Origin"}


class OffLoopTranslator(Translator):
    """The Translator, with every event but a text delta handled in a real OS thread: a node's outputs (`off_loop`)
    and the end of an answer (its citations, their support check, the done event: `check_off_loop`, at most
    CHECK_WORKERS at once) are CPU work that grows with the answer and the chunks; a delta is small and stays on the
    loop, where its event goes out at once."""

    def feed(self, event):
        if isinstance(event, Mapping) and event.get("event") == "message":
            return super().feed(event)
        return off_loop(super().feed, event)

    def end(self):
        return check_off_loop(super().end)


class GCiteChatEndpoint(Endpoint):
    def _invoke(self, r: Request, values: Mapping, settings: Mapping) -> Response:
        config = None
        try:
            try:
                config = read_settings(settings)
            except SettingError as error:
                raise HttpError(500, "not_configured", str(error)) from None
            origin = r.headers.get("Origin")
            if origin and not origin_allowed(r, config, origin):
                raise HttpError(403, "origin_not_allowed", "origin not in allowed_origins")
            if r.method == "OPTIONS":
                if not origin:
                    raise HttpError(403, "origin_not_allowed", "preflight without an Origin")
                return Response(status=204, headers={**cors_headers(r, config), **CORS_HEADERS})
            if r.method != "POST":
                raise HttpError(405, "bad_request", f"method {r.method}")
            sub, roles = caller(r.headers.get("Authorization"), config)
            query, handle = question(r)
            conversation_id = open_handle(config.secret, sub, handle) if handle else None
        except HttpError as error:
            if error.status >= 500 or error.code == "forbidden":
                logger.warning("gcite chat: %s %s (%s)", error.status, error.code, error.detail)
            return json_response(error.status, error.code, cors_headers(r, config))
        except Exception as error:  # noqa: BLE001 - never the SDK's 500 page with the exception text
            logger.error("gcite chat: request failed: %s", type(error).__name__)
            return json_response(500, INTERNAL_ERROR, cors_headers(r, config))
        stream = self._stream(config, sub, roles, query, conversation_id)
        return Response(
            stream,
            status=200,
            headers={**STREAM_HEADERS, **cors_headers(r, config)},
            content_type="text/event-stream; charset=utf-8",
        )

    def _stream(
        self, config: Config, sub: str, roles: list[str], query: str, conversation_id: str | None
    ) -> Iterator[bytes]:
        """The response body: a generator, so the daemon flushes each event as it comes; never raises. Events are
        encoded here (a lone surrogate becomes "?"), so not even encoding can fail after the body started."""
        yield OPEN_COMMENT.encode("ascii")
        translator = OffLoopTranslator(
            source_node=config.source_node,
            snippet_length=config.snippet_length,
            conversation_handle=lambda cid: make_handle(config.secret, sub, cid),
        )

        def app_events() -> Iterator[dict]:
            yield from self.session.app.chat.invoke(
                app_id=config.app_id,
                query=query,
                inputs=machine_inputs({"user_roles": json.dumps(roles, ensure_ascii=False)}),
                response_mode="streaming",
                conversation_id=conversation_id,
                user=sub,
            )

        def log_problem(code: str, error: BaseException) -> None:
            logger.error("gcite chat: %s: %s: %s", code, type(error).__name__, str(error)[:500])

        ended = False  # a done or error event was sent
        try:
            for name, data in translate(app_events(), translator, on_problem=log_problem):
                yield gcite_sse(name, data).encode("utf-8", "replace")
                ended = name in ("done", "error")
        except Exception as error:  # noqa: BLE001 - an exception after the body started would reach the caller raw
            log_problem(INTERNAL_ERROR, error)
            if not ended:
                yield gcite_sse(*error_event(INTERNAL_ERROR)).encode("utf-8")
