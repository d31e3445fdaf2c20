"""The gateway of an app: its route over the app's engine link, accounts and ledger."""

from __future__ import annotations

from collections.abc import Callable

from launch.fleet.supervisor import FleetSupervisor
from m3ui.accounts.keys import ApiKeyStore
from m3ui.accounts.store import AccountStore
from m3ui.accounts.usage import UsageLedger
from m3ui.engine_link import EngineLink
from m3ui.gateway.callers import Callers
from m3ui.gateway.gateway import Gateway
from m3ui.gateway.limits import KeyLimits


def app_gateway(link: EngineLink, accounts: AccountStore | None, file_key: str | None,
                limits: tuple[int, int] | None = None,
                fleet: Callable[[], FleetSupervisor | None] = lambda: None) -> Gateway:
    keys = ApiKeyStore(accounts) if accounts is not None else None
    ledger = UsageLedger(accounts) if accounts is not None else None
    return Gateway(link.endpoint, lambda: link.status().label, Callers(keys, file_key), ledger,
                   KeyLimits(*limits) if limits else None, lambda: fleet_worker(link, fleet()))


def fleet_worker(link: EngineLink, fleet: FleetSupervisor | None) -> str | None:
    """On a fleet, the URL of its least loaded healthy worker (for the routes its router does not serve); None
    when the app is not in front of a fleet's router."""
    if fleet is None or not link.fronts_a_fleet:
        return None
    healthy = [w for w in fleet.snapshot().workers if w.in_router and w.healthy]
    return min(healthy, key=lambda w: w.load).url if healthy else ""
