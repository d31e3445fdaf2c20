"""The login checks of AccessPolicy (Gradio's auth callables): any text a visitor types is a refusal or a
login, never an exception (which the login page would show as a server error)."""

from m3ui.access import AccessPolicy

POLICY = AccessPolicy("0.0.0.0", "pässwort", (("bob", "pw"),))


def test_non_ascii_credentials_are_refused_not_raised():
    assert POLICY.check_chat_login("bøb", "pw") is False
    assert POLICY.check_chat_login("bob", "pw€") is False
    assert POLICY.check_admin_login("ädmin", "x") is False


def test_a_non_ascii_admin_password_lets_the_admin_in():
    assert POLICY.check_admin_login("admin", "pässwort") is True
    assert POLICY.check_chat_login("admin", "pässwort") is True
    assert POLICY.check_chat_login("bob", "pw") is True
    assert POLICY.check_admin_login("admin", "passwort") is False
