"""Startup options of the HTTP side (issue 9 #2, #4, #10): the admin password from a file or the environment
instead of argv, --allowed-host checked before anything starts, the warnings an operator gets, and a URL that
works for the address the app listens on."""

import pytest

from app import parse_args
from m3ui.access import AccessPolicy
from m3ui.web.urls import browse_url


@pytest.mark.parametrize(("host", "url"), [
    ("127.0.0.1", "http://127.0.0.1:7860/"), ("0.0.0.0", "http://127.0.0.1:7860/"), ("::", "http://[::1]:7860/"),
    ("::1", "http://[::1]:7860/"), ("fe80::2", "http://[fe80::2]:7860/"), ("box.lan", "http://box.lan:7860/"),
])
def test_the_printed_url_is_one_a_browser_can_open(host, url):
    assert browse_url(host, 7860) == url


def password_file(folder, mode: int):
    secret = folder / "admin.pw"
    secret.write_text("correct horse battery\n")
    secret.chmod(mode)
    return secret


def test_the_admin_password_comes_from_a_private_file(tmp_path):
    args = parse_args(["--admin-password-file", str(password_file(tmp_path, 0o600))])
    assert args.admin_password == "correct horse battery"
    assert args.password_warning is None


def test_a_password_file_others_can_read_gets_a_warning(tmp_path):
    secret = password_file(tmp_path, 0o644)
    args = parse_args(["--admin-password-file", str(secret)])
    assert args.admin_password == "correct horse battery"
    assert f"chmod 600 {secret}" in args.password_warning


@pytest.mark.parametrize(("content", "expected"), [(None, "No such file"), ("\n", "empty"), ("x" * 5000, "bytes")])
def test_an_unusable_password_file_stops_before_anything_starts(tmp_path, capsys, content, expected):
    secret = tmp_path / "admin.pw"
    if content is not None:
        secret.write_text(content)
    with pytest.raises(SystemExit) as stopped:
        parse_args(["--admin-password-file", str(secret)])
    assert stopped.value.code == 2
    assert expected in capsys.readouterr().err


def test_options_that_clash_or_do_not_parse_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        parse_args(["--admin-password", "x", "--admin-password-file", str(password_file(tmp_path, 0o600))])
    assert "give the admin password once" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["--allowed-host", "http://m3ui.example.org:7860"])
    assert "without scheme, port or path" in capsys.readouterr().err


def test_a_password_on_the_command_line_is_warned_about():
    assert "visible to every user" in parse_args(["--admin-password", "long enough password"]).password_warning


def test_the_environment_still_gives_the_admin_password(monkeypatch):
    monkeypatch.setenv("M3UI_ADMIN_PASSWORD", "from the environment")
    assert AccessPolicy.from_env("0.0.0.0", None).admin_password == "from the environment"


def test_the_endpoint_key_can_come_from_the_environment_instead_of_argv(monkeypatch):
    monkeypatch.setenv("M3UI_ENDPOINT_API_KEY", "sk-from-env")
    assert parse_args(["--endpoint", "http://127.0.0.1:30000"]).api_key == "sk-from-env"
    assert parse_args(["--endpoint", "http://127.0.0.1:30000", "--api-key", "given"]).api_key == "given"


def test_startup_warnings_name_a_short_password_and_an_open_chat():
    short = AccessPolicy("127.0.0.1", "pw123")
    assert any("admin password is short (5 characters)" in w for w in short.warnings())
    open_chat = AccessPolicy("0.0.0.0", "a long admin password")
    assert any("chat is open to anyone who can reach 0.0.0.0" in w for w in open_chat.warnings())
    assert AccessPolicy("0.0.0.0", "a long admin password", (("bob", "pw"),)).warnings() == []
    assert AccessPolicy("127.0.0.1", "a long admin password").warnings() == []
