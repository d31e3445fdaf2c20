"""Every tab of both apps in both themes at 1440×900 and 390×844, for looking at one by one (issue 26).

Starts `python app.py` on the simulated engine with two accounts (an admin and a user; temporary data folder),
has the user chat once (with reasoning) and ask the Tools tab once, so that no tab is shown only empty, then writes
full-page palette PNGs named `<page>-<tab>-<theme>-<width>.png` into the folder given: the login page, the chat app's
Chat, Tools, Monitor, Account and Connect (as the user) and each admin tab (as the admin). Stops everything.

Run from the repo root: `.venv/bin/python scripts/screenshots_tabs.py --out DIR` (needs requirements-dev.txt and
Debian's chromium).
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scripts.screenshots import (  # noqa: E402
    DESKTOP,
    PHONE,
    REASONING_QUESTION,
    TOOLS_QUESTION,
    UI_TIMEOUT_MS,
    ask,
    output_folder,
    save_small,
    settle,
)
from tests.app_process import running_app_with_accounts  # noqa: E402
from tests.browser import chromium_page, open_tab, sign_in  # noqa: E402

ADMIN = ("alice", "alice-screenshots-pw")
USER = ("bob", "bob-screenshots-pw")
THEMES = ("light", "dark")
CHAT_TABS = ("Chat", "Tools", "Monitor", "Account", "Connect")
ADMIN_TABS = ("Launch", "Engine log", "Hardware & model", "Profiles", "Model weights", "Attach", "Fleet",
              "Placement", "Tune", "Users")


def main() -> int:
    out = output_folder(__doc__.splitlines()[0])
    if out is None:
        return 1
    with tempfile.TemporaryDirectory(prefix="m3ui-tab-shots-") as tmp, \
            running_app_with_accounts(Path(tmp), USER, (*ADMIN, "admin")) as app:
        with chromium_page(DESKTOP) as page:
            page.set_default_timeout(UI_TIMEOUT_MS)
            for theme in THEMES:
                for size in (DESKTOP, PHONE):
                    page.set_viewport_size({"width": size[0], "height": size[1]})
                    page.goto(f"{app.url}/?__theme={theme}")
                    page.locator("input[type=password]").wait_for()
                    keep(out, f"login-{theme}-{size[0]}", shot(page))
            sign_in(page, f"{app.url}/?__theme=light", USER)
            page.set_viewport_size({"width": DESKTOP[0], "height": DESKTOP[1]})
            page.locator(".m3-thinking-mode").get_by_label("Enabled", exact=True).check()
            ask(page, "#m3-message", "#m3-send", "#m3-stop", REASONING_QUESTION)
            page.get_by_role("tab", name="Tools").click()
            ask(page, "#m3-tools-message", "#m3-tools-send", "#m3-tools-stop", TOOLS_QUESTION)
            every_tab(page, out, f"{app.url}/", "chat", CHAT_TABS)
        with chromium_page(DESKTOP) as page:
            page.set_default_timeout(UI_TIMEOUT_MS)
            sign_in(page, f"{app.url}/admin/?__theme=light", ADMIN)
            page.wait_for_selector("#m3-admin-status .m3a-status-card")
            every_tab(page, out, f"{app.url}/admin/", "admin", ADMIN_TABS)
    return 0


def every_tab(page, out: Path, url: str, prefix: str, tabs: tuple[str, ...]) -> None:
    for theme in THEMES:
        for size in (DESKTOP, PHONE):
            page.set_viewport_size({"width": size[0], "height": size[1]})
            page.goto(f"{url}?__theme={theme}")
            page.locator("#m3-header, #m3-admin-status").first.wait_for()
            settle(page)
            for tab in tabs:
                open_tab(page, tab)
                keep(out, f"{prefix}-{slug(tab)}-{theme}-{size[0]}", shot(page))


# Down the page a screen at a time: a code block measures its lines only once scrolled into view (before that its
# line numbers are spaced by a guess), as it does for a person reading the page.
SCROLL_THROUGH = """async () => { document.activeElement?.blur();
  for (let y = 0; y < document.documentElement.scrollHeight; y += window.innerHeight) {
    window.scrollTo(0, y); await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))); }
  window.scrollTo(0, 0); }"""


def shot(page) -> bytes:
    page.evaluate(SCROLL_THROUGH)
    settle(page)
    return page.screenshot(full_page=True)


def slug(tab: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", tab.lower()).strip("-")


def keep(out: Path, name: str, png: bytes) -> None:
    path = out / f"{name}.png"
    save_small(png, path)
    print(f"{path}: {path.stat().st_size // 1024} kB", flush=True)


if __name__ == "__main__":
    sys.exit(main())
