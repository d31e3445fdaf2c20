"""Fetch what the contract tests read, before the tests run (tests themselves never touch the network):
the sglang-kt and kt-kernel 0.7.2 wheels (`pip download --no-deps`) and sglang-kt's parser modules with
their light dependencies. Idempotent: what is cached is kept. Run by scripts/test.sh."""

from tests.sglang_wheel import install_parsers
from tests.wheel_cache import download_wheel


def main() -> None:
    download_wheel("kt-kernel", "0.7.2")
    install_parsers(str(download_wheel("sglang-kt", "0.7.2")))


if __name__ == "__main__":
    main()
