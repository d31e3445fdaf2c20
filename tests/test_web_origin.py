"""Which Origin headers count as the app itself (m3ui.web.origin_guard), and which Host names are served
(m3ui.web.hosts) — the rules the raw-HTTP tests drive end to end (issue 9 #1)."""

import pytest

from m3ui.web.hosts import allowed_hosts, check_allowed_host, local_addresses, split_host
from m3ui.web.origin_guard import origin_allowed


@pytest.mark.parametrize(("origin", "host", "allowed"), [
    ("http://127.0.0.1:7860", "127.0.0.1:7860", True),
    ("http://LOCALHOST:7860", "localhost:7860", True),
    ("http://[::1]:7860", "[::1]:7860", True),
    ("https://box.lan", "box.lan", True),
    ("http://127.0.0.1:7861", "127.0.0.1:7860", False),  # another app on this machine
    ("http://evil.example:7860", "127.0.0.1:7860", False),
    ("http://localhost:7860", "127.0.0.1:7860", False),
    ("null", "127.0.0.1:7860", False),
    ("file://", "127.0.0.1:7860", False),
    ("http://127.0.0.1:7860", None, False),
    ("http://[::1", "127.0.0.1:7860", False),
])
def test_only_the_app_itself_is_a_same_origin(origin, host, allowed):
    assert origin_allowed(origin, host, "http", ()) is allowed


def test_names_given_with_allowed_host_are_trusted_origins_behind_a_proxy():
    assert origin_allowed("https://m3ui.example.org", "127.0.0.1:7860", "http", ("m3ui.example.org",))
    assert origin_allowed("https://a.lab.org", "127.0.0.1:7860", "http", ("*.lab.org",))
    assert not origin_allowed("https://lab.org.evil.example", "127.0.0.1:7860", "http", ("*.lab.org",))
    assert not origin_allowed("http://[::2]:80", "127.0.0.1:7860", "http", ("[::1]",))


def test_the_served_names_follow_the_listen_address():
    assert allowed_hosts("127.0.0.1") == ["127.0.0.1", "localhost", "[::1]"]
    assert "10.1.2.3" in allowed_hosts("10.1.2.3")
    assert "[fe80::1]" in allowed_hosts("fe80::1")
    assert "box.lan" in allowed_hosts("127.0.0.1", ("Box.LAN",))
    everywhere = allowed_hosts("::")
    assert all(a in everywhere or f"[{a}]" in everywhere for a in local_addresses())


@pytest.mark.parametrize("bad", ["", "http://x.org", "x.org:8080", "x.org/path", "a*.x.org", "*x.org"])
def test_unusable_allowed_host_values_are_explained(bad):
    assert check_allowed_host(bad)


@pytest.mark.parametrize("good", ["m3ui.example.org", "*.lab.org", "10.0.0.5", "::1", "[::1]"])
def test_usable_allowed_host_values(good):
    assert check_allowed_host(good) is None


@pytest.mark.parametrize(("header", "parsed"), [
    ("127.0.0.1:7860", ("127.0.0.1", 7860)), ("LocalHost", ("localhost", 80)), ("[::1]:7860", ("[::1]", 7860)),
    ("evil.example:abc", None), ("evil@127.0.0.1", None), ("", None), ("[::1", None), ("a b", None),
])
def test_host_headers_parse_or_are_refused(header, parsed):
    assert split_host(header) == parsed
