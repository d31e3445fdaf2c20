"""Bad API calls on the real app get a 4xx with a plain message, never a 500, a raw Python error or a
traceback in the log (issue 9 #8); an app without an upload component refuses uploads (issue 9 #3/#5)."""

import json

import pytest

from tests.app_process import running_app
from tests.web_requests import admin_cookie, client, completed, config, form_values, join


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("api-calls")) as running:
        yield running


def with_textbox(cfg: dict) -> tuple[dict, int]:
    """A named handler of the app with a textbox input, and that input's position."""
    types = {c["id"]: c["type"] for c in cfg["components"]}
    for dep in cfg["dependencies"]:
        kinds = [types[i] for i in dep["inputs"]]
        if dep.get("api_name") and dep["backend_fn"] and "textbox" in kinds:
            return dep, kinds.index("textbox")
    raise AssertionError("no handler with a textbox input")


def test_unknown_functions_and_bad_inputs_get_a_plain_4xx(app):
    with client(app) as c:
        main = config(c, "")
        dep, textbox = with_textbox(main)
        name, good = dep["api_name"], form_values(main, dep)
        nulled, typed = list(good), list(good)  # a null, or a number, where the textbox holds text
        nulled[textbox], typed[textbox] = None, 42
        refused = {
            "unknown fn_index": (c.post("/gradio_api/queue/join", json={"data": [], "fn_index": 9999,
                                                                        "session_hash": "s"}), 404),
            "unknown API name": (c.post("/gradio_api/run/no_such_fn", json={"data": []}), 404),
            "unknown name, queued": (c.post("/gradio_api/call/no_such_fn", json={"data": []}), 404),
            "unknown name, v2": (c.post("/gradio_api/call/v2/no_such_fn", json={}), 404),
            "fn_index beats the name": (c.post(f"/gradio_api/run/{name}", json={"data": good, "fn_index": 9999}),
                                        404),
            "number for text": (join(c, "", dep["id"], typed)[0], 422),
            "too few inputs": (c.post(f"/gradio_api/run/{name}", json={"data": good[:-1]}), 422),
            "admin: unknown fn_index": (join(c, "/admin", 9999, [], headers=admin_cookie(app))[0], 404),
        }
        for case, (answer, status) in refused.items():
            assert answer.status_code == status, (case, answer.status_code, answer.text[:300])
            assert answer.headers["content-type"].startswith("text/plain"), case
            assert answer.text.startswith("call refused: "), (case, answer.text)
        assert "input" in refused["number for text"][0].text and "must be text, got a number" in \
            refused["number for text"][0].text
        assert "unknown function number 9999" in refused["unknown fn_index"][0].text
        accepted, session = join(c, "", dep["id"], good)
        assert accepted.status_code == 200, accepted.text
        assert completed(c, "", session)["success"] is True, "a well-formed call still runs"
        nulls, session = join(c, "", dep["id"], nulled)  # what the browser sends for an untouched textbox
        assert nulls.status_code == 200, nulls.text
        done = completed(c, "", session)
        assert done["success"] is True and "NoneType" not in json.dumps(done), done
    assert "Traceback" not in app.log()


def test_gradios_deep_link_route_which_writes_a_file_per_page_state_is_refused(app):
    with client(app) as c:
        main = config(c, "")
        dep, _ = with_textbox(main)
        accepted, session = join(c, "", dep["id"], form_values(main, dep))  # the session now has a state
        assert accepted.status_code == 200 and completed(c, "", session)["success"] is True
        for mount, headers in (("", {}), ("/admin", admin_cookie(app))):
            answer = c.get(f"{mount}/gradio_api/deep_link", params={"session_hash": session}, headers=headers)
            assert answer.status_code == 404, (mount, answer.status_code, answer.text[:200])
            assert "deep links are off" in answer.text


def test_an_app_without_an_upload_component_refuses_uploads_and_the_chat_takes_its_attachments(app):
    with client(app) as c:
        answer = c.post("/admin/gradio_api/upload", files={"files": ("big.bin", b"x" * 100_000)},
                        headers=admin_cookie(app))
        assert answer.status_code == 403, (answer.status_code, answer.text[:200])
        assert "takes no files" in answer.text
        # the chat's attachments (m3ui/ui/chat/attachments.py) are its one upload component
        answer = c.post("/gradio_api/upload", files={"files": ("notes.txt", b"x" * 100_000)})
        assert answer.status_code == 200, answer.text[:200]


def test_a_chat_id_not_in_the_list_gets_a_plain_message_not_gradios_choices_error(app):
    with client(app) as c:
        main = config(c, "")
        picker = next(comp["id"] for comp in main["components"]
                      if comp.get("props", {}).get("elem_id") == "m3-chat-list")
        dep = next(d for d in main["dependencies"] if d["backend_fn"] and d["inputs"][-1:] == [picker])
        for chat_id in ("\x00", "no-such-chat", 7):
            answer, session = join(c, "", dep["id"], [*form_values(main, dep)[:-1], chat_id])
            assert answer.status_code == 200, answer.text
            done = completed(c, "", session)
            shown = json.dumps(done)
            assert done["success"] is False and "not in the list of choices" not in shown, done
            assert "That chat is not in this page's list" in done["output"]["error"], done
