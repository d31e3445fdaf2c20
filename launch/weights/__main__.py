"""`python -m launch.weights {config,plan,download,verify}`: the admin panel's weights feature in a terminal.

Exit codes: 0 ok / complete, 1 failure, refusal or incomplete, 2 usage. The token comes from HF_TOKEN or
huggingface_hub's login (never from argv, which other users can read).
"""

from __future__ import annotations

import argparse
import signal
import sys

from launch.weights import (
    DEFAULT_REPO_ID,
    Downloader,
    DownloadRequest,
    WeightsError,
    fetch_config,
    plan_download,
    verify_folder,
)

_POLL_S = 1.0


def _cmd_config(args: argparse.Namespace) -> int:
    print(fetch_config(args.repo, args.dest, endpoint=args.endpoint, revision=args.revision))
    return 0


def _request(args: argparse.Namespace) -> DownloadRequest:
    return DownloadRequest(args.repo, args.dest, revision=args.revision, endpoint=args.endpoint,
                           workers=args.workers)


def _cmd_plan(args: argparse.Namespace) -> int:
    plan = plan_download(_request(args))
    print(plan.summary())
    return 1 if plan.refusal else 0


def _cmd_download(args: argparse.Namespace) -> int:
    downloader = Downloader(_request(args))
    # Ctrl-C cancels (partial files kept) instead of raising mid-join, and the loop reports the outcome.
    signal.signal(signal.SIGINT, lambda _sig, _frame: downloader.cancel())
    downloader.start()
    while not (progress := downloader.wait(_POLL_S)).finished:
        print(f"{progress.state}: {progress.summary()}", flush=True)
    print(f"{progress.state}: {progress.message}", flush=True)
    return 0 if progress.state == "done" else 1


def _cmd_verify(args: argparse.Namespace) -> int:
    result = verify_folder(args.dest, deep=args.deep)
    print(result.message)
    return 0 if result.complete else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m launch.weights", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, handler in (("config", _cmd_config), ("plan", _cmd_plan), ("download", _cmd_download)):
        p = sub.add_parser(name)
        p.add_argument("dest", help="model folder to download into")
        p.add_argument("--repo", default=DEFAULT_REPO_ID)
        p.add_argument("--revision", default="main")
        p.add_argument("--endpoint", help="Hub URL (default: HF_ENDPOINT, else huggingface.co)")
        p.add_argument("--workers", type=int, default=DownloadRequest.workers)
        p.set_defaults(handler=handler)
    p = sub.add_parser("verify")
    p.add_argument("dest")
    p.add_argument("--deep", action="store_true", help="re-hash every file")
    p.set_defaults(handler=_cmd_verify)
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except WeightsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
