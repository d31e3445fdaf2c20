"""m3ui: `python app.py` starts the UI and, in the background, the engine it talks to.

With no options it runs the simulated engine (no GPU needed); `--endpoint URL` attaches to a running
OpenAI-compatible server; `--engine sglang --profile FILE` launches the real sglang-kt; `--fleet FILE` runs a
fleet of engines behind sglang-router (docs/FLEET.md) and chats through the router.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import ipaddress
import logging
import os
import re
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from m3ui.access import ADMIN_PASSWORD_ENV, DEFAULT_SESSION_HOURS
from m3ui.accounts import AccountError, AccountStore
from m3ui.data_dir import default_data_dir
from m3ui.gateway.limits import DEFAULT_CONCURRENCY, DEFAULT_PER_MINUTE, parse_limits
from m3ui.secret_file import SecretFileError, read_secret_file
from m3ui.web.hosts import check_allowed_host

if TYPE_CHECKING:
    from launch.preflight import LaunchPlan
    from m3ui.services import AppServices  # imported late at run time (it loads the engine stack)

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

DEFAULT_DATA_DIR = default_data_dir()
ENDPOINT_KEY_ENV = "M3UI_ENDPOINT_API_KEY"  # --endpoint's key without putting it in argv


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python app.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="address the UI listens on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=7860, help="UI port (default 7860)")
    p.add_argument("--endpoint", help="attach to a running OpenAI-compatible server, e.g. http://gpu-box:8000")
    p.add_argument("--api-key", default=os.environ.get(ENDPOINT_KEY_ENV) or None,
                   help=f"API key for --endpoint; visible in `ps`: prefer the {ENDPOINT_KEY_ENV} environment variable")
    p.add_argument("--engine", choices=("sim", "sglang"), help="launch this engine (sglang needs --profile)")
    p.add_argument("--profile", type=Path, help="launch settings saved from the admin panel or `python -m launch`")
    p.add_argument("--fleet", type=Path, metavar="FILE", help="run the fleet FILE describes (engines behind "
                   "sglang-router, see docs/FLEET.md) and chat through its router")
    p.add_argument("--admin-password", help="password of the 'admin' user; visible in `ps`: prefer "
                   "--admin-password-file or M3UI_ADMIN_PASSWORD. Without one the admin panel is served only on "
                   "loopback, with a per-start token in the printed admin URL")
    p.add_argument("--admin-password-file", type=Path, metavar="FILE",
                   help="read the admin password from the first line of FILE (mode 600)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="also answer requests for this host name (repeatable; *.example.org allowed); loopback "
                   "names and the --host address are always allowed, any other Host header is refused")
    p.add_argument("--trusted-proxy", action="append", default=[], metavar="ADDRESS",
                   help="a reverse proxy in front of the app (repeatable): its X-Forwarded-For names the client in "
                   "the login throttle and audit log, its X-Forwarded-Proto: https marks every cookie Secure. "
                   "Without one those headers are ignored, so no local process can pose as another client")
    p.add_argument("--chat-user", action="append", default=[], metavar="USER:PASSWORD",
                   help="an account for chat (repeatable; created or its password set at start). Any account "
                   "makes the chat ask for a login: `python -m m3ui.users add NAME` adds one without a password "
                   "in argv")
    p.add_argument("--session-hours", type=float, default=DEFAULT_SESSION_HOURS, metavar="HOURS",
                   help="a login lasts this long, then asks again (default %(default)s)")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help=f"profiles, runs and logs "
                   f"(default {DEFAULT_DATA_DIR})")
    p.add_argument("--gateway-key-file", type=Path, metavar="FILE",
                   help="turn the API gateway (/v1/...) on without accounts: the one key it takes, first line of "
                   "FILE (mode 600)")
    p.add_argument("--gateway-key-limits", default=f"{DEFAULT_CONCURRENCY}/{DEFAULT_PER_MINUTE}",
                   metavar="AT_ONCE/PER_MINUTE", help="requests each API key may have running at once, and send per "
                   "minute (default %(default)s)")
    p.add_argument("--gateway-cors", metavar="ORIGIN", help="let pages of this one origin call the API gateway "
                   "from a browser, e.g. https://chat.example.org (CORS is off without it)")
    args = p.parse_args(argv)
    if args.engine == "sglang" and not args.profile:
        p.error("--engine sglang needs --profile FILE (save one in the admin panel or with `python -m launch`)")
    if not 0 < args.session_hours <= 24 * 365:
        p.error(f"--session-hours {args.session_hours}: give hours between 0 and {24 * 365}")
    if args.endpoint and (args.engine or args.profile):
        p.error("--endpoint attaches to a running server: do not combine it with --engine/--profile")
    if args.fleet and (args.endpoint or args.engine or args.profile):
        p.error("--fleet brings its own engines: do not combine it with --endpoint/--engine/--profile")
    for item in args.chat_user:
        if ":" not in item or not item.split(":", 1)[0]:
            p.error(f"--chat-user {item!r}: use USER:PASSWORD")
    for address in args.trusted_proxy:
        try:
            ipaddress.ip_address(address)
        except ValueError:
            p.error(f"--trusted-proxy {address!r}: give the proxy's IP address, e.g. 127.0.0.1")
    for name in args.allowed_host:
        if problem := check_allowed_host(name):
            p.error(f"--allowed-host {name!r}: {problem}")
    args.password_warning = None
    if args.admin_password_file:
        if args.admin_password:
            p.error("give the admin password once: --admin-password or --admin-password-file")
        try:
            args.admin_password, args.password_warning = read_secret_file(args.admin_password_file)
        except SecretFileError as exc:
            p.error(f"--admin-password-file: {exc}")
    elif args.admin_password:
        args.password_warning = ("--admin-password is visible to every user of this machine (ps): use "
                                 f"--admin-password-file or {ADMIN_PASSWORD_ENV}")
    if args.gateway_cors is not None and not re.fullmatch(r"https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?",
                                                          args.gateway_cors):
        p.error(f"--gateway-cors {args.gateway_cors!r}: give one origin, scheme://host[:port], e.g. "
                "https://chat.example.org")
    try:
        args.gateway_limits = parse_limits(args.gateway_key_limits)
    except ValueError as exc:
        p.error(f"--gateway-key-limits {args.gateway_key_limits!r}: {exc}")
    args.gateway_key = None
    if args.gateway_key_file:
        try:
            args.gateway_key, loose = read_secret_file(args.gateway_key_file)
        except SecretFileError as exc:
            p.error(f"--gateway-key-file: {exc}")
        if loose:  # a key others can read is no key
            p.error(f"--gateway-key-file: {loose}")
    return args


def start_engine(args: argparse.Namespace, services: AppServices) -> int:
    """Start or attach what the options ask for; non-zero when the launch was refused."""
    from launch.command import Engine
    from launch.findings import format_findings
    from launch.profile import ProfileError, load_profile
    from m3ui.services import simulated_settings, start_default_engine

    link = services.link
    if args.fleet:
        return start_fleet_file(args.fleet, args.data_dir, services)
    if args.endpoint:
        link.attach(args.endpoint.rstrip("/").removesuffix("/v1"), args.api_key)
        return 0
    plan: LaunchPlan | None
    if args.profile:
        try:
            prof = load_profile(args.profile)
        except ProfileError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        engine = Engine(args.engine, prof.engine.python) if args.engine else prof.engine
        plan = link.launch(prof.settings, engine)
    elif args.engine == "sim":
        plan = link.launch(simulated_settings(), Engine("sim"))
    else:
        plan = start_default_engine(services)
    if plan is not None and plan.findings:
        print(format_findings(plan.findings), file=sys.stderr)
    return 0 if plan is None or plan.ok else 1


def start_fleet_file(path: Path, data_dir: Path, services: AppServices) -> int:
    """Run the fleet (stopped at exit, after uvicorn), attach the chat to its router, and hand it to the admin."""
    from launch.fleet.cli import start_fleet
    from launch.fleet.fleet_file import FleetFileError, load_fleet_file
    from launch.fleet.progress import follow_fleet
    from m3ui.engine_link import FLEET_ROUTER

    try:
        fleet = load_fleet_file(path)
    except FleetFileError as exc:
        print(f"error: --fleet: {exc}", file=sys.stderr)
        return 2
    supervisor = start_fleet(fleet, data_dir, sys.stderr)
    if supervisor is None:
        return 1
    atexit.register(supervisor.stop)
    follow_fleet(supervisor, sys.stderr)  # workers starting and ready, the router, a worker dying and back
    services.fleet = supervisor
    services.link.attach(fleet.router.url, None, attached_as=FLEET_ROUTER, simulated=fleet.engine.kind == "sim")
    return 0


def open_accounts(data_dir: Path, chat_users: tuple[tuple[str, str], ...]) -> AccountStore:
    """The accounts database, with an account for each --chat-user (created, or its password set)."""
    accounts = AccountStore.open(data_dir)
    for name, password in chat_users:
        user, done = accounts.seed(name, password)
        if done != "unchanged":
            logging.getLogger("m3ui").info("--chat-user %s: account %s", user.name, done)
    return accounts


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per health probe drowns the log
    import uvicorn

    from launch.supervisor import install_signal_handlers
    from m3ui.access import AccessPolicy
    from m3ui.services import AppServices
    from m3ui.ui.app_view import build_asgi_app
    from m3ui.web.shutdown import GRACEFUL_SHUTDOWN_S, quiet_cancelled_responses
    from m3ui.web.urls import browse_url

    users = tuple(tuple(item.split(":", 1)) for item in args.chat_user)
    try:
        accounts = open_accounts(args.data_dir, users)
    except (AccountError, sqlite3.Error, RuntimeError) as exc:
        print(f"error: accounts: {exc}", file=sys.stderr)
        return 2
    policy = AccessPolicy.from_env(args.host, args.admin_password, users,
                                   tuple(args.allowed_host), accounts, args.session_hours)
    services = AppServices.create(args.data_dir, policy)
    services.gateway_key, services.gateway_limits = args.gateway_key, args.gateway_limits
    services.gateway_cors = args.gateway_cors
    # uvicorn shuts down gracefully on SIGINT/SIGTERM (streams still open are cut after GRACEFUL_SHUTDOWN_S) and
    # then re-raises the signal to the handler it found: ours stops the engine (it runs in its own session, so
    # nothing else would) before the app exits.
    install_signal_handlers(services.supervisor)
    quiet_cancelled_responses()
    atexit.register(services.close)
    try:
        code = start_engine(args, services)
        if code:
            return code
        for warning in [args.password_warning, *policy.warnings()]:
            if warning:
                logging.getLogger("m3ui").warning(warning)
        app = build_asgi_app(services)
        url = browse_url(args.host, args.port)
        token = f"?token={policy.admin_token}" if policy.admin_open_locally else ""
        print(f"m3ui: {url}" + (f"  (admin: {url}admin/{token})" if policy.admin_served else ""), flush=True)
        # What is built by now (Gradio's blocks, every module) lives as long as the app: frozen, the collector's
        # full passes no longer walk it (each walked ~300,000 objects and stalled every stream for 0.3 s)
        gc.collect()
        gc.freeze()
        # uvicorn's default trusts X-Forwarded-For from 127.0.0.1: any local process could then pick the address
        # the login throttle counts; only a named proxy is believed
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning", proxy_headers=bool(args.trusted_proxy),
                    forwarded_allow_ips=args.trusted_proxy or None, timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)  # type: ignore[arg-type]  # uvicorn waits with asyncio.wait_for: a float is fine
        return 0
    finally:
        services.close()


if __name__ == "__main__":
    sys.exit(main())
