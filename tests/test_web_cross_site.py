"""Cross-site control of the app, over raw HTTP against the real `python app.py` (issue 9 #1, #5): a forged
Host (DNS rebinding) or a foreign Origin is refused on both apps, the passwordless admin needs the token
printed at startup, the engine-Python exploit cannot be driven from another site, and the admin's exports
are not served by the main app."""

import stat

import pytest

from tests.app_process import running_app
from tests.web_requests import admin_cookie, client, config, dependency, form_values, join, port_of, run

ALLOWED = "m3ui.test"
EVIL = "evil.example"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("cross-site"), "--allowed-host", ALLOWED) as running:
        yield running


@pytest.fixture(scope="module")
def cookie(app) -> dict[str, str]:
    return admin_cookie(app)


def routes(app, cookie) -> list[tuple[str, str, dict]]:
    """(method, path, request arguments) touching every kind of route of both apps."""
    log_file = str(app.log_path)
    join_body = {"json": {"data": [], "fn_index": 0, "session_hash": "x"}}
    upload = {"files": {"files": ("a.txt", b"hello")}}
    found = []
    for mount in ("", "/admin"):
        found += [("GET", f"{mount}/", {}), ("GET", f"{mount}/config", {}),
                  ("GET", f"{mount}/gradio_api/file={log_file}", {}),
                  ("POST", f"{mount}/gradio_api/queue/join", join_body),
                  ("POST", f"{mount}/gradio_api/upload", upload),
                  ("POST", f"{mount}/login", {"data": {"username": "admin", "password": "x"}})]
    found.append(("GET", "/m3ui-live/" + "t" * 24, {}))  # a page's live channel (m3ui.live)
    found.append(("POST", "/m3ui-live/" + "t" * 24 + "/ask", {"json": {"text": "hi"}}))  # a question sent early
    return [(m, p, {**kw, "headers": dict(cookie) if p.startswith("/admin") else {}}) for m, p, kw in found]


def test_a_foreign_host_is_refused_on_every_route_of_both_apps(app, cookie):
    port = port_of(app)
    with client(app) as c:
        for method, path, kwargs in routes(app, cookie):
            kwargs["headers"]["Host"] = f"{EVIL}:{port}"
            answer = c.request(method, path, **kwargs)
            assert 400 <= answer.status_code < 500, (path, answer.status_code, answer.text[:200])
        for name in ("127.0.0.1", "localhost", "[::1]", ALLOWED, ALLOWED.upper()):
            for mount, headers in (("", {}), ("/admin", cookie)):
                answer = c.get(f"{mount}/config", headers={**headers, "Host": f"{name}:{port}"})
                assert answer.status_code == 200, (name, mount, answer.status_code, answer.text[:200])


def test_a_foreign_origin_can_post_nothing_and_is_never_echoed(app, cookie):
    port = port_of(app)
    foreign = [f"http://{EVIL}", f"http://{EVIL}:{port}", "null", f"http://127.0.0.1:{port + 1}"]
    with client(app) as c:
        main = config(c, "")
        fn = next(d["id"] for d in main["dependencies"] if not d["inputs"] and d["backend_fn"])
        for origin in foreign:
            for method, path, kwargs in routes(app, cookie):
                kwargs["headers"]["Origin"] = origin
                answer = c.request(method, path, **kwargs)
                assert answer.status_code == 403, (origin, path, answer.status_code, answer.text[:200])
                assert "access-control-allow-origin" not in answer.headers, (origin, path)
            preflight = c.options("/gradio_api/queue/join", headers={
                "Origin": origin, "Access-Control-Request-Method": "POST"})
            assert preflight.status_code == 403 and "access-control-allow-origin" not in preflight.headers
        own = f"http://127.0.0.1:{port}"
        answer, _ = join(c, "", fn, [], headers={"Origin": own})
        assert answer.status_code == 200, answer.text
        assert answer.headers.get("access-control-allow-origin") == own
        named = c.get("/config", headers={"Origin": f"http://{ALLOWED}:{port}", "Host": f"{ALLOWED}:{port}"})
        assert named.status_code == 200


def test_the_passwordless_admin_needs_the_token_printed_at_startup(app):
    assert "/admin/?token=" in app.admin_url
    with client(app) as c:
        for path in ("/admin/", "/admin/config", "/admin/?token=wrong"):
            refused = c.get(path)
            assert refused.status_code == 403, (path, refused.status_code)
            assert "admin URL printed" in refused.text
        assert join(c, "/admin", 0, [])[0].status_code == 403
        traded = c.get(app.admin_url)
        assert traded.status_code == 303 and traded.headers["location"] == "/admin/"
        set_cookie = traded.headers["set-cookie"]
        assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie and "Path=/admin" in set_cookie
        assert c.get("/admin/config").status_code == 200  # the cookie now travels with every admin request
        assert c.get("/config").status_code == 200
    with client(app) as other:
        assert other.get("/", headers={}).status_code == 200, "the chat needs no token"
    assert "audit: admin token accepted from 127.0.0.1" in app.log()


def test_the_engine_python_exploit_cannot_be_driven_cross_site(app, cookie, tmp_path):
    """The issue's exploit: set the engine Python to a script; the admin's hardware re-detection runs it."""
    marker = tmp_path / "pwned"
    script = tmp_path / "evil-python"
    script.write_text(f"#!/bin/sh\necho pwned > {marker}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    port = port_of(app)
    with client(app) as c:
        admin = config(c, "/admin", cookie)
        redetect = dependency(admin, "admin_redetect")
        data = form_values(admin, redetect)
        data[0:2] = ["sglang", str(script)]  # engine kind, engine Python
        attacks = {
            "DNS rebinding": {**cookie, "Host": f"{EVIL}:{port}", "Origin": f"http://{EVIL}:{port}"},
            "page on another site": {**cookie, "Origin": f"http://{EVIL}"},
            "no token": {},
        }
        for attack, headers in attacks.items():
            answer, _ = join(c, "/admin", redetect["id"], data, headers=headers)
            assert answer.status_code in (400, 403), (attack, answer.status_code, answer.text[:200])
        assert not marker.exists(), "the script ran"
        done = run(c, "/admin", redetect["id"], data, headers={**cookie, "Origin": f"http://127.0.0.1:{port}"})
    assert done["success"], done
    assert marker.read_text().strip() == "pwned", "control: the operator's own page does run the engine Python"


def test_admin_exports_are_served_by_the_admin_app_only(app, cookie):
    with client(app) as c:
        download = dependency(config(c, "/admin", cookie), "admin_download_log")
        done = run(c, "/admin", download["id"], [], headers=cookie)
        path = done["output"]["data"][0]["value"]["path"]
        exported = c.get(f"/admin/gradio_api/file={path}", headers=cookie)
        assert exported.status_code == 200 and "ready to roll" in exported.text
        assert c.get(f"/gradio_api/file={path}").status_code == 403
        assert c.get(f"/admin/gradio_api/file={path}").status_code == 403, "no token, no export"
