"""The page's GET endpoints (endpoints/page.py): only the page's files, right types, safe headers, no traversal."""

import importlib.util
import logging
import re

import pytest
from werkzeug import Request

from gcite import ROOT
from tests.support.yamltext import safe_load

PAGE = ROOT / "endpoints" / "page"


@pytest.fixture(scope="module")
def endpoint():
    spec = importlib.util.spec_from_file_location("gcite_page_endpoint", ROOT / "endpoints" / "page.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.GCitePageEndpoint(None)


def get(endpoint, values, settings=None):
    request = Request.from_values(path="/gcite/" + values.get("asset", ""), method="GET")
    return endpoint.invoke(request, values, settings or {})


@pytest.mark.parametrize(
    "asset, content_type, path",
    [
        (None, "text/html; charset=utf-8", PAGE / "index.html"),
        ("index.html", "text/html; charset=utf-8", PAGE / "index.html"),
        ("gcite.css", "text/css; charset=utf-8", PAGE / "gcite.css"),
        ("gcite.js", "text/javascript; charset=utf-8", PAGE / "gcite.js"),
        # the stream client the page imports: the JS client package's module itself, not a copy
        ("gcite-client.js", "text/javascript; charset=utf-8", ROOT / "clients" / "js" / "gcite-client.js"),
    ],
)
def test_serves_each_file_with_its_type_and_safe_headers(endpoint, asset, content_type, path):
    response = get(endpoint, {"asset": asset} if asset else {})
    assert response.status_code == 200
    assert response.headers["Content-Type"] == content_type
    assert response.get_data() == path.read_bytes()
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp and "connect-src 'self'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert "frame-ancestors 'self'" in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize(
    "asset",
    [
        "../page.py",
        "../../manifest.yaml",
        "page/../gcite.js",
        "%2e%2e/page.py",
        "..%2Fpage.py",
        "/etc/passwd",
        "GCITE.JS",
        "gcite.js/",
        "index.html/../../main.py",
        "chat",
        "page.yaml",
        ".",
        "package.json",
        "gcite-client.d.ts",
        "../clients/js/gcite-client.js",
        "clients/js/gcite-client.js",
    ],
)
def test_anything_else_is_404_without_content(endpoint, asset):
    response = get(endpoint, {"asset": asset})
    assert response.status_code == 404
    assert response.get_data() == b"not found\n"
    assert "Content-Security-Policy" in response.headers


def ancestors_of(endpoint, allowed):
    csp = get(endpoint, {}, {"allowed_origins": allowed}).headers["Content-Security-Policy"]
    return re.search(r"frame-ancestors ([^;]*)$", csp).group(1).split()


def test_frame_ancestors_take_the_allowed_origins_as_browsers_write_them(endpoint):
    allowed = (
        "https://app.example.com, http://localhost:3000 HTTPS://Upper.Example.COM/ https://a.example.com:443 "
        "http://127.0.0.1:8765 http://[::1]:8080 https://xn--fiq228c.example"
    )
    assert ancestors_of(endpoint, allowed) == [
        "'self'",
        "https://app.example.com",
        "http://localhost:3000",
        "https://upper.example.com",
        "https://a.example.com",
        "http://127.0.0.1:8765",
        "http://[::1]:8080",
        "https://xn--fiq228c.example",
    ]
    assert ancestors_of(endpoint, "*") == ["'self'"]  # every site may call the endpoint; none may frame the page


def test_a_blank_jwt_audience_means_no_audience():
    from endpoints.settings import read_settings

    base = {"app": {"app_id": "app-1"}, "token_secret": "s" * 32, "allowed_origins": "https://app.example.com"}
    assert read_settings({**base, "jwt_audience": "   "}).audience is None
    assert read_settings({**base, "jwt_audience": " gcite-chat "}).audience == "gcite-chat"


def test_a_key_pasted_into_allowed_origins_is_not_echoed():
    from endpoints.settings import SettingError, allowed_origins

    for key in ("S3CRETvalue-abcdefghijkl", "q9ZxL0m_-vT3yYb8rN2kWc5HdJ7uP1sA4eGfQiOoR6M", "a" * 64):
        with pytest.raises(SettingError) as caught:
            allowed_origins({"allowed_origins": f"https://app.example.com {key}"})
        assert key not in str(caught.value) and key[:8] not in str(caught.value)
        assert str(caught.value).startswith(f"setting allowed_origins: an entry of {len(key)} letters and digits")


@pytest.mark.parametrize(
    "entry",
    [
        "http://*",
        "https://*.example.com",
        "http://;report-uri",
        "https://a.example.com';",
        "javascript:alert(1)",
        "https://x.example.com/path",
        "https://x.example.com?q",
        "https://x.example.com#f",
        "ftp://x.example.com",
        "https://",
        "http://:80",
        "https://user@x.example.com",
        "https://x.example.com:99999",
        "https://x.example.com:",
        "https://-x.example.com",
        "https://例子.example",
        "'self'",
        "data:",
        "https://x.example.com:80:80",
    ],
)
def test_frame_ancestors_refuse_a_malformed_setting_with_a_message_naming_it(endpoint, entry):
    from endpoints.settings import SettingError, allowed_origins, logger

    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger.addHandler(handler)
    try:
        assert ancestors_of(endpoint, f"https://app.example.com {entry} report-uri https://evil.example") == ["'self'"]
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in records] == [
        f"gcite page: setting allowed_origins: {entry} is not an origin; write each site as scheme://host[:port], "
        "e.g. https://chat.example.com, or * for every site; the page may be framed only by itself"
    ]
    with pytest.raises(
        SettingError,
        match=r"^setting allowed_origins: .* is not an origin; write each site as "
        r"scheme://host\[:port\]",
    ):
        allowed_origins({"allowed_origins": f"https://app.example.com, {entry}"})


def test_gcite_serve_allow_origin_takes_what_this_setting_takes():
    """`gcite serve --allow-origin` checks origins with this setting's pattern (it cannot import this module, which
    imports dify_plugin) and writes each as browsers send `Origin`: lower case, no default port, no trailing slash."""
    from endpoints import settings
    from gcite.cli import serve as serve_cli

    assert serve_cli.ORIGIN.pattern == settings.ORIGIN.pattern
    assert serve_cli.MIN_SECRET_BYTES == settings.MIN_SECRET_BYTES
    for given, origin in (
        ("http://localhost:3000", "http://localhost:3000"),
        ("HTTP://LocalHost:3000/", "http://localhost:3000"),
        ("https://app.example.com:443", "https://app.example.com"),
        ("http://127.0.0.1:80", "http://127.0.0.1"),
        ("http://[::1]:5173", "http://[::1]:5173"),
    ):
        assert serve_cli.origin_of(given) == (origin, None)
        assert settings.allowed_origins({"allowed_origins": origin}) == [origin] == [settings.normal_origin(given)]


def test_a_csp_injection_through_the_setting_never_reaches_the_header(endpoint):
    for allowed in (
        "http://;report-uri https://evil.example/r",
        "http://a.example.com;script-src *",
        "https://a.example.com\u000d\u000aSet-Cookie: x=1",
    ):
        csp = get(endpoint, {}, {"allowed_origins": allowed}).headers["Content-Security-Policy"]
        assert csp.endswith("frame-ancestors 'self'") and "report-uri" not in csp and csp.count(";") == 7


def test_page_has_no_inline_script_and_never_writes_html():
    html = (PAGE / "index.html").read_text(encoding="utf-8")
    assert re.findall(r"<script[^>]*>", html) == ['<script type="module" src="gcite.js">']
    assert not re.search(r"\son[a-z]+=", html)  # no inline event handlers (the CSP would block them anyway)
    for path in (PAGE / "gcite.js", ROOT / "clients" / "js" / "gcite-client.js"):
        js = path.read_text(encoding="utf-8")
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in js, (path.name, sink)


def test_the_page_imports_only_the_files_it_is_served_with():
    """Every module the page imports is one the endpoint serves beside it (a relative import of another file would
    be a 404 in Dify), and the client module imports nothing."""
    from endpoints.page import FILES

    imports = re.findall(
        r'^import .* from "\./([^"]+)";$', (PAGE / "gcite.js").read_text(encoding="utf-8"), re.MULTILINE
    )
    assert imports == ["gcite-client.js"] and set(imports) <= set(FILES)
    assert not re.search(
        r"^\s*(import|export) .* from ", (ROOT / "clients/js/gcite-client.js").read_text(encoding="utf-8"), re.MULTILINE
    )


def test_the_endpoint_declarations_route_to_the_page_module():
    for name, path in (("page.yaml", "/gcite/"), ("page_assets.yaml", "/gcite/<path:asset>")):
        declaration = safe_load((ROOT / "endpoints" / name).read_text(encoding="utf-8"))
        assert declaration == {"path": path, "method": "GET", "extra": {"python": {"source": "endpoints/page.py"}}}
