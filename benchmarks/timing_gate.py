"""How a benchmark's `--check` judges its figures, so that a busy CI machine cannot fail a landing over a timing.

- Correctness-like figures (the rate the page shows, every session completing, fairness, every message stored
  once) are hard gates: a miss fails every `--check`, and a run is never repeated to get past one.
- Latency and CPU figures are timings: under `--check` each is the best of up to BEST_OF runs (a run is repeated
  only while a timing misses). On a quiet machine they fail past their target; in CI (`--ci`, or CI=true in the
  environment) only past CI_SLACK times their target. Every run prints both verdicts for each timing.

A cost (ms, CPU time, seconds) doubles; a ratio against an ideal 1.0 (UI throughput over direct, fleet
scaling) has its shortfall doubled: a 0.95 target is 0.90 in CI.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

BEST_OF = 3
CI_SLACK = 2.0

Run = TypeVar("Run")


@dataclass(frozen=True)
class Timing:
    """One latency or CPU figure against its target: a cost (lower is better) unless `ratio`."""

    name: str
    value: float
    target: float
    unit: str = ""
    ratio: bool = False  # a share of an ideal 1.0, higher is better: its shortfall is what CI_SLACK multiplies
    # A target not reached yet: CI fails past this bound instead (a gross regression from today's figure), while
    # every run still prints the target's miss
    open_ci_bound: float | None = None

    def bound(self, slack: float) -> float:
        if slack != 1.0 and self.open_ci_bound is not None:
            return self.open_ci_bound
        return 1 - slack * (1 - self.target) if self.ratio else self.target * slack

    def within(self, slack: float) -> bool:
        return self.value >= self.bound(slack) if self.ratio else self.value <= self.bound(slack)

    def better_than(self, other: Timing) -> bool:
        return self.value > other.value if self.ratio else self.value < other.value

    def line(self) -> str:
        sign = ">=" if self.ratio else "<="

        def verdict(slack: float) -> str:
            return f"{sign} {self.bound(slack):.4g}{self.unit} {'met' if self.within(slack) else 'MISSED'}"

        return f"{self.name} {self.value:.4g}{self.unit}: target {verdict(1.0)}; CI bound {verdict(CI_SLACK)}"


@dataclass(frozen=True)
class Gate:
    """What this invocation checks: `check` (exit 1 on a miss) and whether timings get CI's slack."""

    check: bool
    ci: bool

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Gate:
        return cls(bool(args.check), bool(args.ci) or os.environ.get("CI", "").lower() == "true")

    @property
    def slack(self) -> float:
        return CI_SLACK if self.ci else 1.0

    @property
    def runs(self) -> int:
        """Runs allowed for the timings: best of BEST_OF under --check, one otherwise."""
        return BEST_OF if self.check else 1

    def best_of(self, measure: Callable[[], Run], timings: Callable[[Run], list[Timing]],
                hard_misses: Callable[[Run], list[str]] = lambda _: []) -> tuple[list[Run], list[Timing]]:
        """measure() until every timing (each its best over the runs so far) is within this gate's bound, up to
        `runs` times, or until a run misses a hard gate. Returns every run and each timing's best."""
        done: list[Run] = []
        best: dict[str, Timing] = {}
        for attempt in range(1, self.runs + 1):
            run = measure()
            done.append(run)
            for timing in timings(run):
                if timing.name not in best or timing.better_than(best[timing.name]):
                    best[timing.name] = timing
            missing = [t.name for t in best.values() if not t.within(self.slack)]
            if hard_misses(run) or not missing:
                break
            if attempt < self.runs:
                print(f"run {attempt} of up to {self.runs}: {', '.join(missing)} past the bound; running again",
                      file=sys.stderr)
        return done, list(best.values())

    def failures(self, timings: list[Timing], hard_misses: list[str]) -> list[str]:
        """Prints each timing's verdicts and every miss; returns what fails this gate."""
        policy = f"CI: fail past {CI_SLACK:g}x target" if self.ci else "quiet machine: fail past target"
        print(f"timings, best of the runs taken ({policy}):")
        for timing in timings:
            print(f"  {timing.line()}")
        failed = [*hard_misses, *(f"{t.name} {t.value:.4g}{t.unit} past {t.bound(self.slack):.4g}{t.unit}"
                                  for t in timings if not t.within(self.slack))]
        for miss in failed:
            print(f"MISSED: {miss}", file=sys.stderr)
        return failed

    def exit_code(self, timings: list[Timing], hard_misses: list[str]) -> int:
        failed = self.failures(timings, hard_misses)
        return 1 if self.check and failed else 0


def add_arguments(parser: argparse.ArgumentParser, check_help: str = "exit 1 when a target is missed") -> None:
    parser.add_argument("--check", action="store_true", help=check_help)
    parser.add_argument("--ci", action="store_true",
                        help=f"a shared CI machine: timings fail only past {CI_SLACK:g}x their target "
                             "(also when CI=true)")
