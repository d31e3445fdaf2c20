"""`python -m m3ui.users`: manage the accounts of an m3ui from a shell (the first admin on a headless host).

    python -m m3ui.users add alice --role admin     # asks for the password (or reads it from stdin)
    python -m m3ui.users list
    python -m m3ui.users disable|enable alice
    python -m m3ui.users passwd alice
    python -m m3ui.users role alice user|admin
    python -m m3ui.users quota alice 200000|none    # daily tokens (prompt + completion)
    python -m m3ui.users signup on|off
    python -m m3ui.users key add alice [--label laptop] [--expires-days 90]   # the key alone on the last line
    python -m m3ui.users key list [alice]
    python -m m3ui.users key revoke ID

Passwords are never taken from the command line (`ps` shows it to every user of the machine): they are asked
for twice on a terminal, or read from the first line of stdin. A running app sees every change at once.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from m3ui.accounts import AccountError, AccountStore
from m3ui.accounts.keys import ApiKey, ApiKeyStore
from m3ui.accounts.store import ROLES
from m3ui.accounts.usage import local_time, parse_quota
from m3ui.data_dir import default_data_dir


def read_password(prompt: str = "Password: ") -> str:
    if sys.stdin.isatty():
        first = getpass.getpass(prompt)
        if getpass.getpass("Again: ") != first:
            raise AccountError("the two passwords differ: nothing changed")
        return first
    line = sys.stdin.readline()
    if not line:
        raise AccountError("no password on stdin: nothing changed")
    return line.rstrip("\r\n")


def list_users(store: AccountStore) -> str:
    rows = [f"{'name':24} {'role':6} {'state':9} {'quota/day':>10} {'created':16} last login"]
    for user in store.list():
        quota = "-" if user.daily_token_quota is None else str(user.daily_token_quota)
        rows.append(f"{user.name:24} {user.role:6} {'enabled' if user.enabled else 'disabled':9} {quota:>10} "
                    f"{local_time(user.created_at):16} {local_time(user.last_login_at)}")
    rows.append(f"sign-up: {'on' if store.signup_enabled else 'off'}")
    return "\n".join(rows)


def list_keys(keys: list[ApiKey]) -> str:
    rows = [f"{'id':12} {'user':24} {'state':8} {'label':20} {'created':16} {'last used':16} expires"]
    rows += [f"{k.id:12} {k.user:24} {k.state():8} {k.label:20} {local_time(k.created_at):16} "
             f"{local_time(k.last_used_at):16} {local_time(k.expires_at) if k.expires_at else 'never'}" for k in keys]
    return "\n".join(rows)


def key_command(store: AccountStore, args: argparse.Namespace) -> str:
    keys = ApiKeyStore(store)
    match args.key_command:
        case "add":
            key, secret = keys.create(args.name, args.label, args.expires_days)
            expiry = f", expires {local_time(key.expires_at)}" if key.expires_at else ""
            return (f"API key {key.id} for {key.user}{expiry}. It is shown this once; keep it secret "
                    f"(Authorization: Bearer KEY, or x-api-key: KEY):\n{secret}")
        case "list":
            return list_keys(keys.list(args.name))
        case _:
            key = keys.revoke(args.id)
            return f"API key {key.id} of {key.user}: revoked"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m m3ui.users", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", type=Path, default=default_data_dir(), help="the app's data folder (default "
                   "%(default)s)")
    sub = p.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add", help="add a user (the password is asked for)")
    add.add_argument("name")
    add.add_argument("--role", choices=ROLES, default="user")
    sub.add_parser("list", help="list the users")
    for command in ("disable", "enable", "passwd"):
        sub.add_parser(command).add_argument("name")
    role = sub.add_parser("role", help="change a user's role")
    role.add_argument("name")
    role.add_argument("role", choices=ROLES)
    quota = sub.add_parser("quota", help="a user's daily token quota (or none)")
    quota.add_argument("name")
    quota.add_argument("tokens")
    signup = sub.add_parser("signup", help="let people create their own accounts on the login page")
    signup.add_argument("state", choices=("on", "off"))
    key = sub.add_parser("key", help="API keys for the gateway (coding agents, scripts)")
    key_sub = key.add_subparsers(dest="key_command", required=True)
    key_add = key_sub.add_parser("add", help="a new key for a user: printed once, alone on the last line")
    key_add.add_argument("name")
    key_add.add_argument("--label", default="")
    key_add.add_argument("--expires-days", type=int, default=None)
    key_sub.add_parser("list", help="the keys (of one user)").add_argument("name", nargs="?")
    key_sub.add_parser("revoke", help="revoke a key by its id").add_argument("id")
    return p


def run(args: argparse.Namespace) -> str:
    store = AccountStore.open(args.data_dir)
    try:
        match args.command:
            case "add":
                user = store.add(args.name, read_password(), args.role)
                return f"added {user.name} ({user.role})"
            case "list":
                return list_users(store)
            case "disable" | "enable":
                user = store.set_enabled(args.name, args.command == "enable")
                return f"{user.name}: {args.command}d (a running app signs its sessions out within seconds)" \
                    if args.command == "disable" else f"{user.name}: enabled"
            case "passwd":
                store.require(args.name)  # "no user" before asking for a password
                return f"{store.set_password(args.name, read_password('New password: ')).name}: password changed"
            case "role":
                return f"{store.set_role(args.name, args.role).name}: role {args.role}"
            case "key":
                return key_command(store, args)
            case "quota":
                quota = store.set_quota(args.name, parse_quota(args.tokens)).daily_token_quota
                return f"{args.name}: daily token quota {'none' if quota is None else quota}"
            case _:
                store.set_signup(args.state == "on")
                return f"sign-up {args.state}"
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        print(run(args))
    except AccountError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0

