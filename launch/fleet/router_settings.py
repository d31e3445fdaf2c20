"""The router's settings: one typed table of the sglang-router 0.3.2 flags m3ui drives.

Each field of `RouterSettings` carries its flag, kind, help and range in its metadata, as the engine's table
(launch/settings.py) does. Defaults are sglang_router's own (`router_args.py`), except where the router's
default is unsafe here: it listens on 0.0.0.0, and its Prometheus exporter on 0.0.0.0:29000, where a second
router on the host panics. So the exporter always binds the router's own address, on `prometheus_port`
(default: the router's port + 1). tests/test_fleet_router_contract.py checks the table against the real
package's argument parser.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from launch.health import engine_url
from launch.settings import LaunchSettings

RouterKind = Literal["str", "int", "float", "bool"]
ROUTER_MODULE = "sglang_router.launch_router"
POLICIES = ("cache_aware", "power_of_two", "round_robin", "random")  # "manual" needs routing keys m3ui never sends
LOG_LEVELS = ("debug", "info", "warn", "error")


@dataclass(frozen=True)
class RouterFlag:
    flag: str
    kind: RouterKind
    help: str
    choices: tuple[str, ...] = ()
    lo: float | None = None
    hi: float | None = None
    always: bool = False  # spelled out even at sglang_router's default


def _opt(default: Any, flag: str, kind: RouterKind, help: str, **spec: Any) -> Any:
    return field(default=default, metadata={"flag": RouterFlag(flag, kind, help, **spec)})


@dataclass(frozen=True)
class RouterSettings:
    """Every router flag m3ui drives, in the order the command line spells them."""

    host: str = _opt("127.0.0.1", "--host", "str", "Address the router and its metrics listen on.", always=True)
    port: int = _opt(30000, "--port", "int", "Port of the router's OpenAI API.", lo=1, hi=65535, always=True)
    policy: str = _opt("cache_aware", "--policy", "str", "How a request picks its worker.", choices=POLICIES,
                       always=True)
    prometheus_port: int | None = _opt(
        None, "--prometheus-port", "int", "Port of the router's Prometheus exporter (unset: the router's port + 1).",
        lo=1, hi=65535)
    health_check_interval_secs: int = _opt(
        60, "--health-check-interval-secs", "int", "Seconds between the router's health checks of each worker.",
        lo=1, hi=86_400)
    health_check_timeout_secs: int = _opt(
        5, "--health-check-timeout-secs", "int", "A health check slower than this fails.", lo=1, hi=3600)
    health_failure_threshold: int = _opt(
        3, "--health-failure-threshold", "int", "Failed checks in a row before a worker counts as unhealthy.",
        lo=1, hi=1000)
    retry_max_retries: int = _opt(
        5, "--retry-max-retries", "int", "Attempts for a request whose worker failed.", lo=1, hi=100)
    cb_failure_threshold: int = _opt(
        10, "--cb-failure-threshold", "int", "Failures before a worker's circuit breaker opens.", lo=1, hi=100_000)
    cb_timeout_duration_secs: int = _opt(
        60, "--cb-timeout-duration-secs", "int", "Seconds an open circuit waits before trying the worker again.",
        lo=1, hi=86_400)
    request_timeout_secs: int = _opt(
        1800, "--request-timeout-secs", "int", "Longest a request may take through the router.", lo=1,
        hi=604_800)
    max_concurrent_requests: int = _opt(
        -1, "--max-concurrent-requests", "int", "Requests served at once before queueing (-1: no limit).", lo=-1,
        hi=1_000_000)
    queue_size: int = _opt(
        100, "--queue-size", "int", "Requests that may wait for a slot (0: refuse with 429 at once).", lo=0,
        hi=1_000_000)
    worker_startup_timeout_secs: int = _opt(
        1800, "--worker-startup-timeout-secs", "int", "How long the router waits for a worker it was given.", lo=1,
        hi=86_400)
    worker_startup_check_interval: int = _opt(
        30, "--worker-startup-check-interval", "int",
        "Seconds between startup checks; also how often power_of_two reads each worker's /get_load.", lo=1,
        hi=3600)
    disable_retries: bool = _opt(False, "--disable-retries", "bool", "Never retry a failed request elsewhere.")
    disable_circuit_breaker: bool = _opt(
        False, "--disable-circuit-breaker", "bool", "Keep sending to a failing worker (no circuit breaker).")
    log_level: str = _opt("info", "--log-level", "str", "Router log level.", choices=LOG_LEVELS)

    def replace(self, **changes: Any) -> RouterSettings:
        return dataclasses.replace(self, **changes)

    @property
    def metrics_port(self) -> int:
        return self.prometheus_port if self.prometheus_port is not None else self.port + 1

    @property
    def url(self) -> str:
        return engine_url(LaunchSettings(host=self.host, port=self.port))  # the same wildcard → loopback rule


@dataclass(frozen=True)
class RouterField:
    name: str
    spec: RouterFlag
    default: Any


ROUTER_FIELDS = tuple(RouterField(f.name, f.metadata["flag"], f.default) for f in dataclasses.fields(RouterSettings))
ROUTER_FIELD_BY_NAME = {f.name: f for f in ROUTER_FIELDS}


class RouterSettingsError(ValueError):
    """A router setting that cannot hold the value given (unknown name, wrong type, out of range)."""


def coerce_router(name: str, value: Any) -> Any:
    """A raw value (JSON scalar or CLI text) as the field's type, within its range and choices."""
    fld = ROUTER_FIELD_BY_NAME.get(name)
    if fld is None:
        raise RouterSettingsError(f"unknown router setting {name!r}; known: {', '.join(ROUTER_FIELD_BY_NAME)}")
    spec = fld.spec
    if value is None or (isinstance(value, str) and not value.strip()):
        if fld.default is None:
            return None
        raise RouterSettingsError(f"{spec.flag} needs a value")
    try:
        out = _convert(spec.kind, value)
    except (TypeError, ValueError):
        raise RouterSettingsError(f"{spec.flag}: {value!r} is not a valid {spec.kind}") from None
    if spec.choices and out not in spec.choices:
        raise RouterSettingsError(f"{spec.flag}: {out!r} is not one of {', '.join(spec.choices)}")
    in_range = not isinstance(out, (int, float)) or isinstance(out, bool) or (
        (spec.lo is None or out >= spec.lo) and (spec.hi is None or out <= spec.hi))
    if not in_range:
        raise RouterSettingsError(f"{spec.flag}: {out} is outside {spec.lo:g}..{spec.hi:g}")
    return out


def _convert(kind: RouterKind, value: Any) -> Any:
    if kind == "bool":
        text = str(value).strip().lower()
        if isinstance(value, bool) or text in ("true", "false", "1", "0", "yes", "no", "on", "off"):
            return value if isinstance(value, bool) else text in ("true", "1", "yes", "on")
        raise ValueError
    if isinstance(value, bool):
        raise ValueError
    if kind == "int":
        if isinstance(value, float) and not value.is_integer():
            raise ValueError
        return int(value) if isinstance(value, (int, float)) else int(str(value).strip())
    if kind == "float":
        number = float(value)
        if not math.isfinite(number):
            raise ValueError
        return number
    if not isinstance(value, str):
        raise ValueError
    return value.strip()


def router_from_mapping(values: dict[str, Any], base: RouterSettings | None = None) -> RouterSettings:
    return (base or RouterSettings()).replace(**{k: coerce_router(k, v) for k, v in values.items()})


def router_flag_argv(settings: RouterSettings) -> list[str]:
    """The flags in table order: values that differ from the router's defaults, plus the ones always spelled out.
    The exporter's host is not a field: it is always the router's own address."""
    out: list[str] = []
    for fld in ROUTER_FIELDS:
        value = getattr(settings, fld.name)
        if fld.name == "prometheus_port":
            value = settings.metrics_port
            out += ["--prometheus-host", settings.host, fld.spec.flag, str(value)]
            continue
        if fld.spec.kind == "bool":
            if value:
                out.append(fld.spec.flag)
            continue
        if value is None or (value == fld.default and not fld.spec.always):
            continue
        out += [fld.spec.flag, str(value)]
    return out
