"""Screenshots of the admin's Fleet tab, taken from the running app so that they show what the code does today.

Starts `python app.py --fleet FILE` on two simulated workers behind the real sglang-router (free ports, temporary
data folder) and one more simulated engine outside it, logs in to the admin in real Chromium, attaches that engine
from the Fleet tab, and while two clients chat through the router writes the tab at 1280 px and 390 px wide
(docs/screenshots/admin-fleet.png, admin-fleet-phone.png, palette PNGs); then stops everything.

Run from the repo root: `.venv/bin/python scripts/fleet_screenshots.py [--out DIR]` (needs requirements-dev.txt,
sglang-router and Debian's chromium).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from scripts.screenshots import UI_TIMEOUT_MS, output_folder, save_small, settle  # noqa: E402
from tests.app_process import running_app  # noqa: E402
from tests.browser import chromium_page  # noqa: E402
from tests.fleet_process import free_block  # noqa: E402
from tests.monitor_sims import chatting  # noqa: E402
from tests.sim_process import free_port, running_sim, sim_settings  # noqa: E402

DESKTOP = (1280, 900)
PHONE = (390, 844)
PASSWORD = "fleet-screenshots-pw"


def main() -> int:
    out = output_folder(__doc__.splitlines()[0])
    if out is None:
        return 1
    with tempfile.TemporaryDirectory(prefix="m3ui-fleet-shots-") as tmp:
        router_port, first = free_block(2), free_block(2)
        fleet = Path(tmp) / "fleet.json"
        fleet.write_text(json.dumps({"engine": "sim", "router": {"port": router_port},
                                     "base": {"preset": "single-gpu", "set": {"host": "127.0.0.1"}},
                                     "workers": [{"port": first}, {"port": first + 1}]}))
        with running_app(Path(tmp), "--fleet", str(fleet), "--admin-password", PASSWORD, timeout=120) as app, \
                running_sim(sim_settings(free_port())) as outside, chromium_page(DESKTOP) as page:
            page.set_default_timeout(UI_TIMEOUT_MS)
            open_fleet_tab(page, app.url + "/admin/")
            page.fill("#m3-fleet-url textarea", outside.url)
            page.click("#m3-fleet-attach")
            page.wait_for_selector(f'#m3-fleet-workers tr[data-url="{outside.url}"][data-healthy="true"]')
            with chatting(f"http://127.0.0.1:{router_port}", max_tokens=200):
                # Live figures: some worker's own load (running · waiting · KV tokens) is not all zero.
                page.wait_for_function("[...document.querySelectorAll('#m3-fleet-workers tr[data-url]')]"
                                       ".some(r => /^[1-9]/.test(r.children[6].innerText))")
                shots = {"admin-fleet": shot(page), "admin-fleet-phone": shot(page, PHONE)}
    for name, png in shots.items():
        path = out / f"{name}.png"
        save_small(png, path)
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {path.stat().st_size // 1024} kB")
    return 0


def open_fleet_tab(page, admin_url: str) -> None:
    page.goto(admin_url)
    page.locator("input[type=text]").fill("admin")
    page.locator("input[type=password]").fill(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_selector("#m3-admin-status .m3a-status-card")
    page.get_by_role("tab", name="Fleet").click()
    page.wait_for_selector('#m3-fleet-router [data-fleet-state="ready"]')


def shot(page, viewport: tuple[int, int] | None = None) -> bytes:
    """The whole page (the Fleet tab is longer than a screen), at `viewport` if given."""
    if viewport:
        page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    page.evaluate("document.activeElement?.blur(); window.scrollTo(0, 0)")
    settle(page)
    return page.screenshot(full_page=True)


if __name__ == "__main__":
    sys.exit(main())
