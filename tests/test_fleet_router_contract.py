"""Contract with the real sglang-router 0.3.2: every flag of the router table is an option of its own argument
parser, and the argv m3ui builds parses (with that parser) into exactly the settings it was built from."""

from __future__ import annotations

import argparse

import pytest

from launch.command import Engine
from launch.fleet.commands import router_command
from launch.fleet.router_settings import ROUTER_FIELDS, ROUTER_MODULE, RouterSettings
from launch.fleet.spec import AttachedWorker, Fleet

router_args = pytest.importorskip("sglang_router.router_args")
launch_router = pytest.importorskip("sglang_router.launch_router")

TYPES = {"int": int, "float": float, "str": str}
# Where m3ui departs from the router's defaults on purpose: it listens on 0.0.0.0 (and its exporter on
# 0.0.0.0:29000); m3ui binds both to the settings' address.
OWN_DEFAULTS = {"host"}


@pytest.fixture(scope="module")
def options() -> dict[str, argparse.Action]:
    parser = argparse.ArgumentParser()
    router_args.RouterArgs.add_cli_args(parser)
    return {flag: action for action in parser._actions for flag in action.option_strings}


def test_every_field_is_a_router_option_of_the_same_type_and_default(options: dict[str, argparse.Action]) -> None:
    for fld in ROUTER_FIELDS:
        action = options.get(fld.spec.flag)
        assert action is not None, f"{fld.spec.flag} is not an option of sglang-router 0.3.2"
        if fld.spec.kind == "bool":
            assert isinstance(action, argparse._StoreTrueAction), fld.spec.flag
        else:
            assert action.type is TYPES[fld.spec.kind] and action.nargs is None, fld.spec.flag
        if fld.spec.choices:
            assert set(fld.spec.choices) <= set(action.choices), fld.spec.flag
        if fld.name not in OWN_DEFAULTS and fld.name != "prometheus_port":
            assert fld.default == action.default, fld.name  # so a field left at its default need not be spelled


def _every_value_changed() -> RouterSettings:
    changed = {}
    for fld in ROUTER_FIELDS:
        if fld.spec.kind == "bool":
            changed[fld.name] = not fld.default
        elif fld.spec.choices:
            changed[fld.name] = next(c for c in fld.spec.choices if c != fld.default)
        elif fld.spec.kind == "int":
            changed[fld.name] = int(fld.spec.lo or 0) + 7
        elif fld.name == "host":
            changed[fld.name] = "127.0.0.2"
    return RouterSettings(**changed)


@pytest.mark.parametrize("settings", [RouterSettings(), _every_value_changed()], ids=["defaults", "all-changed"])
def test_the_router_argv_parses_into_the_settings_it_came_from(settings: RouterSettings) -> None:
    fleet = Fleet(settings, (AttachedWorker("http://127.0.0.1:41001"), AttachedWorker("http://10.1.2.3:30000")),
                  Engine("sim"))
    argv = router_command(fleet).argv
    assert argv[1:3] == ("-m", ROUTER_MODULE)
    parsed = launch_router.parse_router_args(list(argv[3:]))
    for fld in ROUTER_FIELDS:
        value = settings.metrics_port if fld.name == "prometheus_port" else getattr(settings, fld.name)
        assert getattr(parsed, fld.name) == value, fld.name
    assert parsed.worker_urls == ["http://127.0.0.1:41001", "http://10.1.2.3:30000"]


def test_the_exporter_binds_the_routers_address_never_the_default_all_interfaces_29000() -> None:
    for host, port in (("127.0.0.1", 30000), ("10.0.0.7", 29000)):
        fleet = Fleet(RouterSettings(host=host, port=port), (AttachedWorker("http://127.0.0.1:1"),))
        parsed = launch_router.parse_router_args(list(router_command(fleet).argv[3:]))
        assert parsed.prometheus_host == host != "0.0.0.0"
        assert parsed.prometheus_port == port + 1 != port
