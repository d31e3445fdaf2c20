"""An app with accounts and API keys, its gateway in front of the simulated engine, for the gateway's tests."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from m3ui.accounts import AccountStore
from m3ui.accounts.keys import ApiKeyStore
from m3ui.accounts.usage import DayUsage, UsageLedger
from tests.account_calls import settled
from tests.app_process import RunningApp, running_app

PEOPLE = ("bob", "carol", "dave")


@dataclass
class GatewayApp:
    app: RunningApp
    keys: dict[str, str]  # person -> their key

    @property
    def base_url(self) -> str:
        return self.app.url + "/v1"

    @property
    def engine_url(self) -> str:
        found = re.findall(r"monitor now watches (http://\S+)", self.app.log())
        assert found, self.app.log()[-2000:]
        return found[-1]

    def engine_counter(self, name: str) -> float:
        text = httpx.get(self.engine_url + "/metrics", timeout=5).text
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(f"sglang:{name}{{"))

    def usage(self, person: str) -> DayUsage | None:
        store = AccountStore.open(self.app.data_dir)
        try:
            days = UsageLedger(store).days(person)
        finally:
            store.close()
        return days[0] if days else None

    def wait_gateway_ready(self, timeout: float = 60) -> None:
        """Until the gateway forwards (200 on /v1/models): the engine's log says ready a moment before the app has
        seen its warm-up answered, and until then the gateway rightly answers 503."""
        deadline = time.monotonic() + timeout
        headers = {"authorization": f"Bearer {self.keys['bob']}"}  # (dave's key is the per-minute test's)
        while httpx.get(self.base_url + "/models", headers=headers, timeout=10).status_code != 200:
            assert time.monotonic() < deadline, self.app.log()[-2000:]
            time.sleep(0.2)

    def usage_after(self, person: str, requests: int, timeout: float = 10) -> DayUsage:
        """The person's usage once `requests` of theirs are settled."""
        store = AccountStore.open(self.app.data_dir)
        try:
            return settled(UsageLedger(store), person, requests, timeout)
        finally:
            store.close()

    def set_quota(self, person: str, tokens: int | None) -> None:
        store = AccountStore.open(self.app.data_dir)
        try:
            store.set_quota(person, tokens)
        finally:
            store.close()


def make_keys(data_dir: Path) -> dict[str, str]:
    store = AccountStore.open(data_dir)
    try:
        keys = ApiKeyStore(store)
        out = {}
        for person in PEOPLE:
            store.add(person, f"{person}-password")
            out[person] = keys.create(person, "tests")[1]
        return out
    finally:
        store.close()


@contextmanager
def gateway_app(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
                ready: bool = True) -> Iterator[GatewayApp]:
    """The app on the simulated engine (waited for: `ready`), or with `args` saying which engine (a fleet)."""
    data_dir = tmp_path / "m3ui-data"
    keys = make_keys(data_dir)
    with running_app(tmp_path, *(args if not ready else ("--engine", "sim", *args)), env=env, data_dir=data_dir,
                     timeout=120) as app:
        gw = GatewayApp(app, keys)
        if ready:
            app.wait_engine_ready()
            gw.wait_gateway_ready()
        yield gw
