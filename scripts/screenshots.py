"""The README's screenshots, taken from the running app so that they show what the code does today.

Starts `python app.py` on the simulated engine (free port, temporary data folder), drives it in real Chromium (a
chat with reasoning, a tool call, the Monitor after some traffic, the admin page), writes Chat, Tools, Monitor and
Admin at 1440×900 and the chat at 390×844 as palette PNGs into docs/screenshots/, and stops everything.

Run from the repo root: `.venv/bin/python scripts/screenshots.py [--out DIR]` (needs requirements-dev.txt and
Debian's chromium).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from PIL import Image  # noqa: E402

from tests.app_process import running_app  # noqa: E402
from tests.browser import CHROMIUM, chromium_page  # noqa: E402
from tests.monitor_sims import chatting  # noqa: E402

DESKTOP = (1440, 900)
PHONE = (390, 844)
UI_TIMEOUT_MS = 60_000
HEATMAP = "#m3-mon-experts img[data-activations]"
REASONING_QUESTION = "Solve step by step: (12 + 7) * 3 - 48 / 6"
TOOLS_QUESTION = "What's the weather in Lisbon, and what is 2**10?"
# Colours a screenshot is reduced to: UI flat colours survive, and each PNG is a few tens of kB.
PALETTE_COLOURS = 128


def output_folder(description: str) -> Path | None:
    """The --out folder, created; None (after saying why) when Chromium is missing."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots", help="folder for the PNGs")
    out = parser.parse_args().out
    if not os.path.exists(CHROMIUM):
        print(f"Chromium not found at {CHROMIUM}: sudo apt-get install -y chromium", file=sys.stderr)
        return None
    out.mkdir(parents=True, exist_ok=True)
    return out


def main() -> int:
    out = output_folder(__doc__.splitlines()[0])
    if out is None:
        return 1
    with tempfile.TemporaryDirectory(prefix="m3ui-screenshots-") as tmp, running_app(Path(tmp)) as app, \
            chromium_page(DESKTOP) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(app.url)
        wait_ready(page)
        shots = {"chat": take_chat(page), "tools": take_tools(page), "monitor": take_monitor(page),
                 "admin": take_admin(page, app.admin_url), "chat-phone": take_phone_chat(page, app.url)}
        for name, png in shots.items():
            path = out / f"{name}.png"
            save_small(png, path)
            print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {path.stat().st_size // 1024} kB")
    return 0


def wait_ready(page) -> None:
    page.wait_for_selector("#m3-header")
    page.wait_for_function("document.querySelector('#m3-header').innerText.includes('ready')")


def settle(page) -> None:
    """Folds, fades and toasts finish before the picture is taken."""
    page.wait_for_timeout(1500)


def take_chat(page) -> bytes:
    ask(page, "#m3-message", "#m3-send", "#m3-stop", "What is 2 + 2?")
    page.click("#m3-new-chat")
    page.locator(".m3-thinking-mode").get_by_label("Enabled", exact=True).check()
    ask(page, "#m3-message", "#m3-send", "#m3-stop", REASONING_QUESTION)
    settle(page)
    return page.screenshot()


def take_tools(page) -> bytes:
    page.get_by_role("tab", name="Tools").click()
    ask(page, "#m3-tools-message", "#m3-tools-send", "#m3-tools-stop", TOOLS_QUESTION)
    settle(page)
    return page.screenshot()


def take_monitor(page) -> bytes:
    """Taken while two clients chat with the engine, so that the figures are live ones."""
    page.get_by_role("tab", name="Monitor").click()
    page.wait_for_selector('#m3-mon-headline [data-engine-state="ok"]')
    engine = re.search(r"at (http://127\.0\.0\.1:\d+)", page.inner_text("#m3-mon-headline"))
    if engine is None:
        raise RuntimeError(f"no engine URL in the Monitor's headline: {page.inner_text('#m3-mon-headline')}")
    with chatting(engine.group(1), max_tokens=200):
        page.wait_for_function(f"(document.querySelector('{HEATMAP}')?.dataset.activations ?? 0) > 0")
        page.wait_for_function(r"/GENERATION\s+[1-9][\d.]* tok\/s/i.test("
                               "document.querySelector('#m3-mon-headline').innerText)")
        for chart in ("throughput", "requests"):
            page.wait_for_selector(f"#m3-mon-{chart} canvas, #m3-mon-{chart} svg")
        settle(page)
        return page.screenshot()


def take_admin(page, admin_url: str) -> bytes:
    page.goto(admin_url)
    page.wait_for_selector("#m3-admin-status .m3a-status-card")
    page.wait_for_function("document.querySelector('#m3-admin-status .m3a-status-card').dataset.engineState"
                           " === 'ready'")
    settle(page)
    return page.screenshot()


def take_phone_chat(page, url: str) -> bytes:
    """The same browser (its saved chats) on a phone-sized screen."""
    page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
    page.goto(url)
    wait_ready(page)
    page.wait_for_function(f"document.querySelector('#m3-chatbot').innerText.includes({REASONING_QUESTION!r})")
    page.evaluate("document.activeElement?.blur(); window.scrollTo(0, 0)")  # the top of the page, as it opens
    settle(page)
    return page.screenshot()


def ask(page, box: str, send: str, stop: str, text: str) -> None:
    page.fill(f"{box} textarea", text)
    page.keyboard.press("Enter")
    page.wait_for_selector(stop, state="visible")
    page.wait_for_selector(send, state="visible")
    page.wait_for_selector(stop, state="hidden")


def save_small(png: bytes, path: Path) -> None:
    with tempfile.SpooledTemporaryFile() as raw:
        raw.write(png)
        raw.seek(0)
        image = Image.open(raw).convert("RGB")
        image.quantize(PALETTE_COLOURS, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)


if __name__ == "__main__":
    sys.exit(main())
