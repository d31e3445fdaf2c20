"""The gateway of an app: its route over the app's engine link, accounts and ledger."""

from __future__ import annotations

from m3ui.accounts.keys import ApiKeyStore
from m3ui.accounts.store import AccountStore
from m3ui.accounts.usage import UsageLedger
from m3ui.engine_link import EngineLink
from m3ui.gateway.callers import Callers
from m3ui.gateway.gateway import Gateway
from m3ui.gateway.limits import KeyLimits


def app_gateway(link: EngineLink, accounts: AccountStore | None, file_key: str | None,
                limits: tuple[int, int] | None = None) -> Gateway:
    keys = ApiKeyStore(accounts) if accounts is not None else None
    ledger = UsageLedger(accounts) if accounts is not None else None
    return Gateway(link.endpoint, lambda: link.status().label, Callers(keys, file_key), ledger,
                   KeyLimits(*limits) if limits else None)
