"""The address the app listens on, on the real app (issue 9 #1, #10): `--host ::` prints a URL that works
(IPv6), and the --host address is a name the app answers to while a forged Host is still refused."""

import re

import httpx

from m3ui.web.hosts import local_addresses
from tests.app_process import running_app
from tests.web_requests import port_of


def status(url: str, host: str | None = None) -> int:
    headers = {"Host": host} if host else {}
    return httpx.get(url, headers=headers, timeout=15, trust_env=False).status_code


def test_host_ipv6_wildcard_prints_a_url_that_works(tmp_path):
    with running_app(tmp_path, "--host", "::") as app:
        printed = re.search(r"m3ui: (\S+)", app.log()).group(1)
        port = port_of(app)
        assert printed == f"http://[::1]:{port}/"
        assert status(printed + "config") == 200
        for address in local_addresses():
            name = f"[{address}]" if ":" in address else address
            assert status(printed + "config", f"{name}:{port}") == 200, name
        assert status(printed + "config", f"evil.example:{port}") == 400


def test_the_listen_address_is_a_name_the_app_answers_to(tmp_path):
    with running_app(tmp_path, "--host", "127.0.0.2") as app:
        port = port_of(app)
        assert app.url == f"http://127.0.0.2:{port}"
        assert status(app.url + "/config") == 200
        assert status(app.url + "/config", f"localhost:{port}") == 200
        refused = httpx.get(app.url + "/config", headers={"Host": f"evil.example:{port}"}, trust_env=False)
        assert refused.status_code == 400 and "--allowed-host evil.example" in refused.text
    assert "refused requests for Host 'evil.example'" in app.log()
