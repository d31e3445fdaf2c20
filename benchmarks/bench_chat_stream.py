"""What streaming through the UI costs, measured end to end on `python app.py` with the simulated engine.

1. Shown rate: a ~4000-token answer after 20 earlier messages, in real Chromium: tokens per second the page
   shows (first answer text on screen -> last token on screen) against the rate the engine streams the same
   question to a direct openai-SDK client right after (timed at each token's arrival); and Chromium's own CPU
   time (all its processes) per 1,000 tokens shown.
2. Time to first token the UI adds: click Send -> first answer text on screen, against a direct openai-SDK
   request for the same messages, taken in turns (medians; both paths hit the engine's prefix cache alike).
3. Concurrency: 16 browser sessions (Gradio API clients, one session each, with the page's live channel)
   streaming at once, total tokens per second, against 16 direct openai-SDK streams at once, in turns (three rounds
   each). A session ends when its page has the whole answer (the channel's frame with the answer's stats line), as
   a direct stream ends at its last token; what the event does after that (the answer's GPU hit rate, which waits
   for an expert-recorder dump) is printed apart, as the tail. And the app's CPU per streamed token meanwhile, above
   what the idle app spends anyway (the monitor's sampling, the supervisor's probes, measured just before over one
   monitor cycle and printed too).
4. Fairness: 64 browser sessions at once all complete, and the slowest session's rate is at least half the
   median session's.

Targets are side-by-side ratios or costs per token, so a busy machine moves them less than absolute figures.
Run from the repo root: `python benchmarks/bench_chat_stream.py [--check [--ci]] [--profile FILE]`. `--check`
exits 1 when a target is missed: the shown rate, every session completing and fairness are hard gates; TTFT, the
16 sessions' throughput and the app's CPU are timings, the best of up to 3 runs of parts 1-3, failing past their
target, or with `--ci` (CI=true) only past twice it (benchmarks/timing_gate.py); CI also runs fewer TTFT pairs
and rounds. `--profile` records the app with py-spy during the 16 UI sessions and prints where its CPU went. The
engine rate is set with M3UI_SIM_DECODE_TPS; the report prints the rate it really reached. The last line printed
is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import openai  # noqa: E402
import psutil  # noqa: E402

from benchmarks.timing_gate import Gate, Timing, add_arguments  # noqa: E402
from launch.sim.tokens import count_tokens  # noqa: E402
from m3ui.monitor.sampler import SamplerConfig  # noqa: E402
from tests.app_process import running_app  # noqa: E402
from tests.browser import chromium_page  # noqa: E402
from tests.live_reader import LiveReader, channel_client, page_ticket  # noqa: E402
from tests.test_browser_chat import start_new_chat  # noqa: E402

# All-CPU-experts decode speed of the simulated KT hybrid; with the reference preset's GPU hit share the
# engine then streams one request at about 1000 tok/s (if the machine can pace it that fast).
DECODE_TPS = "975"
SHOWN_RATE_TARGET = 0.97  # shown tok/s / engine tok/s
ADDED_TTFT_TARGET_MS = 30.0
CONCURRENT_TARGET = 0.95  # 16 UI sessions' total tok/s / 16 direct clients' total tok/s
APP_CPU_TARGET_MS = 0.10  # app CPU per streamed token above idle, 16 sessions
FAIRNESS_TARGET = 0.50  # slowest of 64 sessions' tok/s / the median session's
# The timings (TTFT, 16 sessions, app CPU) are what a slowed host moves most: a host that slows this 2-core machine
# (its idle app then costs 4-5% of a core instead of 2-3%) slows the page's path more than the SDK's. Slowed so,
# one clean-clone run of three measured +44 ms and one run here 0.094 ms per token, every other figure met; a
# loaded CI machine +72 ms. Runs here once all were met: 0.047-0.062 ms per token, 97-100% of direct, TTFT +12-18
# ms (with the question's request sent at the click and hidden progress tracked nowhere); with the request at the
# click alone 0.08-0.14 ms, 82-103% (the harness's own TLS set-up held its sessions back), +26-104 ms; with merged
# chunks and text 0.08-0.16 ms, 82-92%, +88-122 ms; before the paced reads 0.37-0.51 ms.
IDLE_WINDOW_S = SamplerConfig.expert_dump_every_s  # a whole cycle of the monitor's periodic work
TIMEOUT_S = 120.0
ROUND_ATTEMPTS = 3  # a concurrency round with a failed session (a busy host dropped a connection) is taken again

# Notes in the page when the answer's text first appears and when its last token is on screen. The answer is
# what follows the question in the chat (Gradio may re-create the elements of earlier messages at any update).
WATCH_ANSWER = """([question, marker]) => {
  const root = document.querySelector('#m3-chatbot');
  const answerText = () => {
    const messages = [...root.querySelectorAll('.message-content')].filter(e => !e.closest('.thought-group'));
    const asked = messages.map(e => !!e.closest('.user') && e.textContent.trim() === question).lastIndexOf(true);
    return asked < 0 ? '' : messages.slice(asked + 1).map(e => e.textContent).join('');
  };
  const bench = window.__bench = {t0: performance.now(), first: null, done: null};
  const observer = new MutationObserver(() => {
    const text = answerText();
    if (bench.first === null && text.trim()) bench.first = performance.now();
    if (bench.done === null && text.includes(marker)) {
      bench.done = performance.now();
      observer.disconnect();
    }
  });
  observer.observe(root, {subtree: true, childList: true, characterData: true});
  // Send may be re-drawn for a moment by an update still arriving (the new chat's): click it once it is there.
  const click = () => {
    const send = document.querySelector('#m3-send');
    if (!send) return requestAnimationFrame(click);
    bench.t0 = performance.now();
    send.click();
  };
  click();
}"""


@dataclass(frozen=True)
class Report:
    engine_tok_s: float  # the rate the engine reached for the long answer
    shown_tok_s: float
    answer_tokens: int
    browser_cpu_ms_per_1000_tokens: float
    ttft_direct_ms: float
    ttft_ui_ms: float
    concurrent_direct_tok_s: float
    concurrent_ui_tok_s: float
    concurrent_ui_tail_ms: float  # median: the whole answer on the page -> its event's end (GPU hit-rate note)
    concurrent_ui_asked_early: int  # UI answers whose engine request went out at the click (of sessions * rounds)
    sessions: int
    app_cpu_ms_per_token: float  # above idle, while the UI sessions streamed
    app_cpu_ms_per_token_total: float  # idle share included
    app_idle_cpu_percent: float
    many_sessions: int
    many_completed: int
    many_min_over_median: float
    cores: int
    ttft_runs_ms: dict[str, list[float]]

    @property
    def shown_rate_ratio(self) -> float:
        return self.shown_tok_s / self.engine_tok_s

    @property
    def added_ttft_ms(self) -> float:
        return self.ttft_ui_ms - self.ttft_direct_ms

    @property
    def concurrency_ratio(self) -> float:
        return self.concurrent_ui_tok_s / self.concurrent_direct_tok_s

    def hard_misses(self) -> list[str]:
        """The correctness-like figures: a miss fails --check however busy the machine."""
        checks = [
            (self.many_completed == self.many_sessions,
             f"only {self.many_completed} of {self.many_sessions} sessions completed"),
            (self.many_min_over_median >= FAIRNESS_TARGET,
             f"slowest of {self.many_sessions} sessions at {self.many_min_over_median:.2f} of the median rate "
             f"< {FAIRNESS_TARGET}"),
            *page_misses(self.shown_tok_s, self.engine_tok_s),
        ]
        return [message for ok, message in checks if not ok]

    def render(self) -> str:
        return "\n".join([
            f"shown rate      {self.shown_tok_s:7.0f} tok/s in the browser vs {self.engine_tok_s:.0f} tok/s from the "
            f"engine ({self.answer_tokens} tokens): {self.shown_rate_ratio:.1%}  (target >= {SHOWN_RATE_TARGET:.0%})",
            f"browser CPU     {self.browser_cpu_ms_per_1000_tokens:7.0f} ms of Chromium's CPU per 1,000 tokens shown",
            f"TTFT            {self.ttft_ui_ms:7.0f} ms through the UI vs {self.ttft_direct_ms:.0f} ms direct: "
            f"{self.added_ttft_ms:+.0f} ms  (target <= +{ADDED_TTFT_TARGET_MS:.0f} ms)",
            f"concurrency     {self.concurrent_ui_tok_s:7.0f} tok/s for {self.sessions} UI sessions vs "
            f"{self.concurrent_direct_tok_s:.0f} tok/s for {self.sessions} direct clients: "
            f"{self.concurrency_ratio:.1%}  (target >= {CONCURRENT_TARGET:.0%}), each session until its page had the "
            f"whole answer, {self.concurrent_ui_asked_early} of them sent to the engine at the click; "
            f"{self.concurrent_ui_tail_ms:.0f} ms more (median) until its GPU hit-rate note",
            f"app CPU         {self.app_cpu_ms_per_token:7.3f} ms per streamed token above idle (target <= "
            f"{APP_CPU_TARGET_MS} ms); {self.app_cpu_ms_per_token_total:.3f} ms with the idle app's "
            f"{self.app_idle_cpu_percent:.1f}% of a core",
            f"{self.many_sessions} sessions     {self.many_completed} completed; slowest at "
            f"{self.many_min_over_median:.0%} of the median session's rate  (target >= {FAIRNESS_TARGET:.0%})",
        ])

    def figures(self) -> dict[str, float | int]:
        derived = {"app_cpu_ms_per_token": self.app_cpu_ms_per_token, "added_ttft_ms": self.added_ttft_ms,
                   "concurrency_ratio": self.concurrency_ratio,
                   "sessions_64_min_over_median": self.many_min_over_median,
                   "shown_rate_ratio": self.shown_rate_ratio}
        return {key: round(value, 4) if isinstance(value, float) else value
                for key, value in {**derived, **asdict(self)}.items()}


def count_prompt(tokens: int) -> tuple[str, str]:
    """A "Count to N" question whose answer is about `tokens` long, and the answer's last token."""
    n = 1
    while count_tokens(", ".join(map(str, range(1, n + 1))) + ".") < tokens:
        n += max(1, (tokens - count_tokens(", ".join(map(str, range(1, n + 1))))) // 4)
    return f"Count to {n}", f"{n}."


def direct_client(engine_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{engine_url}/v1", api_key="EMPTY", max_retries=0, timeout=TIMEOUT_S)


@dataclass(frozen=True)
class DirectStream:
    first_token_s: float  # time to the first content token
    tokens: int  # completion tokens
    decode_tok_s: float  # tokens after the first over the time after it, timed at each token's arrival


def direct_stream(client: openai.OpenAI, prompt: str) -> DirectStream:
    """One direct streaming request of `prompt`, timed at each token's arrival (the app times tokens at its paced
    reads, up to one read gap late, so this is also the engine's own rate)."""
    started = time.monotonic()
    times: list[float] = []
    tokens = 0
    stream = client.chat.completions.create(
        model="MiniMax-M3", messages=[{"role": "user", "content": prompt}], stream=True, max_tokens=8192,
        stream_options={"include_usage": True}, extra_body={"chat_template_kwargs": {"thinking_mode": "disabled"}})
    for chunk in stream:
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
        if chunk.choices and chunk.choices[0].delta.content:
            times.append(time.monotonic())
    if not times:
        return DirectStream(float("nan"), tokens, float("nan"))
    decode_s = times[-1] - times[0]
    return DirectStream(times[0] - started, tokens, (tokens - 1) / decode_s if decode_s > 0 else float("nan"))


def ask_in_page(page: object, prompt: str, marker: str) -> dict[str, float]:
    page.fill("#m3-message textarea", prompt)  # type: ignore[attr-defined]
    page.evaluate(WATCH_ANSWER, [prompt, marker])  # type: ignore[attr-defined]
    try:
        page.wait_for_function("window.__bench.done !== null", timeout=TIMEOUT_S * 1000)  # type: ignore[attr-defined]
    except Exception:
        print(f"no {marker!r} in the answer to {prompt!r}; the chat shows:\n"
              + page.inner_text("#m3-chatbot")[-2000:], file=sys.stderr)  # type: ignore[attr-defined]
        raise
    page.wait_for_selector("#m3-send", state="visible", timeout=TIMEOUT_S * 1000)  # type: ignore[attr-defined]
    return page.evaluate("window.__bench")  # type: ignore[attr-defined, no-any-return]


def engine_url_in_header(page: object) -> str:
    page.wait_for_selector("#m3-header", timeout=TIMEOUT_S * 1000)  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        "document.querySelector('#m3-header').innerText.includes('ready')", timeout=TIMEOUT_S * 1000)
    header = page.inner_text("#m3-header")  # type: ignore[attr-defined]
    return re.search(r"at (http://127\.0\.0\.1:\d+)", header).group(1)  # type: ignore[union-attr]


def cpu_seconds(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def chromium_processes() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if "chrom" in p.name().lower()]


@dataclass(frozen=True)
class PageFigures:
    engine_url: str
    engine_tok_s: float
    shown_tok_s: float
    tokens: int
    browser_cpu_ms_per_1000_tokens: float
    ttft_direct_ms: float
    ttft_ui_ms: float
    ttft_runs_ms: dict[str, list[float]]  # each run's, "ui" and "direct"


def measure_page(app_url: str, answer_tokens: int, history: int, ttft_runs: int) -> PageFigures:
    prompt, marker = count_prompt(answer_tokens)
    with chromium_page() as page:
        page.goto(app_url)  # type: ignore[attr-defined]
        page.wait_for_selector("#m3-message textarea", timeout=TIMEOUT_S * 1000)  # type: ignore[attr-defined]
        engine_url = engine_url_in_header(page)
        client = direct_client(engine_url)
        page.locator(".m3-thinking-mode").get_by_label("Disabled", exact=True).check()  # type: ignore[attr-defined]
        ui_ttft, direct_ttft = [], []
        # Untimed first: a fresh page's first answer loads code the later ones reuse, and the SDK's first request
        # opens its connection (each took 2-4 times as long as the runs after it).
        start_new_chat(page)
        ask_in_page(page, "Count to 3", "3.")
        direct_stream(client, "Count to 3")
        for _ in range(ttft_runs):
            start_new_chat(page)  # shown: the chat before (same question) would read as a first token
            times = ask_in_page(page, "Count to 3", "3.")
            ui_ttft.append(times["first"] - times["t0"])
            direct_ttft.append(direct_stream(client, "Count to 3").first_token_s * 1000)
        start_new_chat(page)
        for i in range(history // 2):
            ask_in_page(page, f"What is {i} + {i}?", f"{2 * i}")
        browser = chromium_processes()
        cpu_before = cpu_seconds(browser)
        times = ask_in_page(page, prompt, marker)
        browser_cpu_s = cpu_seconds(browser) - cpu_before
        stats = page.locator("#m3-chatbot .m3-stats").last.inner_text()  # type: ignore[attr-defined]
        engine_rate = direct_stream(client, prompt).decode_tok_s
    tokens = int(re.search(r"→ (\d+) tokens", stats).group(1))  # type: ignore[union-attr]
    shown_rate = tokens / ((times["done"] - times["first"]) / 1000)
    return PageFigures(engine_url, engine_rate, shown_rate, tokens, browser_cpu_s * 1000 / tokens * 1000,
                       statistics.median(direct_ttft), statistics.median(ui_ttft),
                       {"ui": [round(t, 1) for t in ui_ttft], "direct": [round(t, 1) for t in direct_ttft]})


@dataclass(frozen=True)
class Session:
    tokens: int
    seconds: float  # from the common start to this session's end


Ended = tuple[int, float]  # a session's completion tokens, and when it ended (time.monotonic())


def at_once(count: int, run_one: Callable[[int], Ended]) -> list[Session | None]:
    """run_one(i) for i in range(count), all started together; None for one that failed."""
    results: list[Session | None] = [None] * count
    barrier = threading.Barrier(count + 1)
    started = 0.0

    def worker(i: int) -> None:
        barrier.wait()
        try:
            tokens, ended = run_one(i)
        except Exception as exc:  # a failed session is counted, not fatal
            print(f"session {i} failed: {exc!r}", file=sys.stderr)
            return
        results[i] = Session(tokens, ended - started)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    barrier.wait()
    for thread in threads:
        thread.join(TIMEOUT_S)
    return results


def total_rate(sessions: list[Session | None], rounds: int = 1) -> float:
    """Completion tokens per second of `rounds` equal rounds of sessions run one after the other."""
    size = len(sessions) // rounds
    done = [[s for s in sessions[i * size : (i + 1) * size] if s is not None] for i in range(rounds)]
    seconds = sum(max(s.seconds for s in one) for one in done if one)
    return sum(s.tokens for one in done for s in one) / seconds if seconds else 0.0


class UiSessions:
    """Browser sessions as a page runs them: a Gradio API client each, which loads the page's chats with the page's
    live ticket as the page does when it opens; for each question, what the page's click does (assets/js/live.js):
    the live channel opened and the question said to the server at once (m3ui.live.early_ask), then the answer
    asked for through Gradio. They send one question and wait for the whole answer."""

    def __init__(self, app_url: str, count: int) -> None:
        from gradio_client import Client

        # gradio_client makes a new httpx client for every request it sends, and each loads the CA certificates
        # (~30 ms of CPU): 16 sessions asking at once spent up to 1.4 s of this process's GIL on that before their
        # questions reached the app (server stamps), a cost no browser has. One TLS context for all of them (it
        # goes to httpx's `verify` as it is).
        tls = ssl.create_default_context()
        with ThreadPoolExecutor(16) as pool:
            self._clients = list(pool.map(
                lambda _: Client(app_url, verbose=False, download_files=False, ssl_verify=tls),  # type: ignore[arg-type]
                range(count)))
        self._url = app_url
        self._tickets = [page_ticket() for _ in range(count)]
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: self._clients[i].predict(None, self._tickets[i], api_name="/load"), range(count)))
        self._http = channel_client()  # one for all, as a browser keeps its connections
        self.tails_s: list[float] = []  # from the whole answer on the page to the end of its event
        self.sent_early: list[bool] = []  # for each question: whether the app sent its engine request at the click

    def ask(self, i: int, prompt: str) -> Ended:
        """The answer's tokens, and when the page had all of them (else when the event ended)."""
        channel = LiveReader(self._url, self._tickets[i], wait=False, http=self._http, watch=ANSWER_STATS)
        form = {"thinking_mode": "disabled", "temperature": 0.6, "top_p": 0.95, "max_tokens": 8192,
                "stall_seconds": 60, "keep_reasoning": False, "system_prompt": "", "tools": False}
        said = self._http.post(f"{self._url}/m3ui-live/{self._tickets[i]}/ask", json={"text": prompt, **form})
        self.sent_early.append(said.status_code == 200 and said.json()["sent"] is True)
        outputs = self._clients[i].predict(text=prompt, **form, live_ticket=self._tickets[i], api_name="/send")
        ended = time.monotonic()
        channel.join()
        shown = channel.watched_at or ended
        self.tails_s.append(ended - shown)
        # the answer's stats line, "… 812 → 240 tokens", is in the chat the last update shows
        return int(ANSWER_STATS.findall(json.dumps(outputs, ensure_ascii=False))[-1]), shown


ANSWER_STATS = re.compile(r"→ (\d+) tokens")  # in the answer's stats line, once the whole answer is in


@dataclass(frozen=True)
class ConcurrencyFigures:
    direct_tok_s: float
    ui_tok_s: float
    app_cpu_ms_per_token: float
    app_cpu_ms_per_token_total: float
    app_idle_cpu_percent: float
    ui_tail_ms: float  # median time from the whole answer on the page to the end of its event
    ui_asked_early: int


def measure_concurrency(app_url: str, app: psutil.Process, engine_url: str, sessions: int, answer_tokens: int,
                        rounds: int, profile: Path | None) -> ConcurrencyFigures:
    """Direct and UI rounds taken in turns, so that a change in the machine's load meets both alike."""
    prompt, _ = count_prompt(answer_tokens)
    ui = UiSessions(app_url, sessions)
    client = direct_client(engine_url)
    idle_before = cpu_seconds([app])
    time.sleep(IDLE_WINDOW_S)
    idle_rate = (cpu_seconds([app]) - idle_before) / IDLE_WINDOW_S  # CPU seconds per second
    direct: list[Session | None] = []
    streamed: list[Session | None] = []
    cpu_s = elapsed = 0.0
    for round_ in range(rounds):
        for attempt in range(1, ROUND_ATTEMPTS + 1):  # a round counts only whole: a failed session's tokens
            # missing from one side would tilt the ratio
            direct_round = at_once(sessions, lambda _: (direct_stream(client, prompt).tokens, time.monotonic()))
            spy = start_profile(app.pid, profile) if profile and round_ == 0 and attempt == 1 else None
            cpu_before, started = cpu_seconds([app]), time.monotonic()
            ui_round = at_once(sessions, lambda i: ui.ask(i, prompt))
            round_cpu, round_s = cpu_seconds([app]) - cpu_before, time.monotonic() - started
            if spy is not None:
                stop_profile(spy, profile)  # type: ignore[arg-type]
            failed = direct_round.count(None) + ui_round.count(None)
            if not failed:
                break
            print(f"round {round_ + 1}: {failed} session(s) failed (direct {direct_round.count(None)}, UI "
                  f"{ui_round.count(None)}); taken again", file=sys.stderr)
        else:
            raise RuntimeError(f"every try of round {round_ + 1} had a failed session")
        direct += direct_round
        streamed += ui_round
        cpu_s, elapsed = cpu_s + round_cpu, elapsed + round_s
    tokens = sum(s.tokens for s in streamed if s is not None)
    return ConcurrencyFigures(total_rate(direct, rounds), total_rate(streamed, rounds),
                              (cpu_s - idle_rate * elapsed) * 1000 / tokens, cpu_s * 1000 / tokens, idle_rate * 100,
                              statistics.median(ui.tails_s) * 1000, sum(ui.sent_early))


def measure_fairness(app_url: str, sessions: int, answer_tokens: int) -> tuple[int, float]:
    """(sessions completed, slowest session's tok/s over the median session's)"""
    prompt, _ = count_prompt(answer_tokens)
    ui = UiSessions(app_url, sessions)
    done = [s for s in at_once(sessions, lambda i: ui.ask(i, prompt)) if s is not None and s.tokens]
    rates = [s.tokens / s.seconds for s in done]
    return len(done), (min(rates) / statistics.median(rates)) if rates else 0.0


def start_profile(pid: int, path: Path) -> subprocess.Popen[bytes]:
    """py-spy on the app, sampling only the thread that holds the GIL (the app's CPU is a fifth of a core or less:
    at 500 a second that is still only ~100 busy samples a second; py-spy's own CPU slows the round it profiles)."""
    spy = subprocess.Popen([str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(pid),
                            "--output", str(path), "--format", "raw", "--rate", "500", "--nonblocking", "--threads",
                            "--gil"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached
    return spy


# Leaf frames of a thread that is about to wait (caught just before it let the GIL go).
WAITING = ("select (selectors", "wait (threading", "read (httpcore", "sleep", "_wait_for_tstate_lock", "poll (")
PROFILE_GROUPS = {  # the first that matches a sample's stack names its group
    "Gradio: a new component object per gr.skip()/gr.update() output": ("updateable.<locals>.wrapper",),
    "Gradio: Chatbot.postprocess": ("Chatbot.postprocess",),
    "Gradio: streaming diff": ("handle_streaming_diffs",),
    "Gradio: queue, events to the browser": ("gradio/queueing.py", "gradio/route_utils.py", "gradio/routes.py"),
    "openai SDK: a pydantic model per chunk": ("openai/_streaming.py", "openai/_models.py"),
    "m3ui client: SSE, JSON, events": ("m3ui/client/",),
    "m3ui chat session and rendering": ("m3ui/chat_session/", "m3ui/ui/chat"),
    "monitor sampler": ("m3ui/monitor",),
    "supervisor and its health probes": ("launch/",),
    "event loop: HTTP writes, the live channel": ("asyncio/", "uvicorn/", "starlette/", "anyio/", "m3ui/live/"),
}


def stop_profile(spy: subprocess.Popen[bytes], path: Path) -> None:
    spy.send_signal(2)  # SIGINT: py-spy writes its file
    spy.wait(30)
    groups: collections.Counter[str] = collections.Counter()
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if any(mark in stack.rsplit(";", 1)[-1] for mark in WAITING):
            continue
        name = next((group for group, marks in PROFILE_GROUPS.items() if any(m in stack for m in marks)), "other")
        groups[name] += int(count)
    busy = sum(groups.values()) or 1
    print(f"profile of the app while the UI sessions streamed ({busy} busy samples, raw stacks in {path}):")
    for name, count in groups.most_common():
        print(f"  {count / busy:6.1%}  {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("--answer-tokens", type=int, default=4000)
    parser.add_argument("--history", type=int, default=20, help="earlier messages before the long answer")
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--session-tokens", type=int, default=600, help="answer length per concurrent session")
    parser.add_argument("--rounds", type=int, help="direct and UI rounds of the sessions, in turns (3; CI 2)")
    parser.add_argument("--many-sessions", type=int, default=64)
    parser.add_argument("--many-session-tokens", type=int, default=200)
    parser.add_argument("--ttft-runs", type=int, help="UI and direct TTFT pairs (9; CI 5)")
    parser.add_argument("--profile", type=Path, help="py-spy's raw stacks of the app during the UI sessions")
    args = parser.parse_args(argv)
    gate = Gate.from_args(args)
    # In CI fewer TTFT pairs and rounds: the timings there are judged on the best of up to 3 runs.
    args.ttft_runs = args.ttft_runs or (5 if gate.ci else 9)
    args.rounds = args.rounds or (2 if gate.ci else 3)
    env = {"M3UI_SIM_DECODE_TPS": os.environ.get("M3UI_SIM_DECODE_TPS", DECODE_TPS)}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="m3ui-bench-") as tmp, running_app(Path(tmp), env=env) as app:

        def parts_1_to_3() -> tuple[PageFigures, ConcurrencyFigures]:
            page = measure_page(app.url, args.answer_tokens, args.history, args.ttft_runs)
            return page, measure_concurrency(app.url, psutil.Process(app.process.pid), page.engine_url,
                                             args.sessions, args.session_tokens, args.rounds, args.profile)

        runs, best = gate.best_of(parts_1_to_3, lambda run: timings(*run, args.sessions),
                                  lambda run: [m for ok, m in page_misses(run[0].shown_tok_s, run[0].engine_tok_s)
                                               if not ok])
        completed, fairness = measure_fairness(app.url, args.many_sessions, args.many_session_tokens)
    page, load = runs[-1]
    report = Report(page.engine_tok_s, page.shown_tok_s, page.tokens, page.browser_cpu_ms_per_1000_tokens,
                    page.ttft_direct_ms, page.ttft_ui_ms, load.direct_tok_s, load.ui_tok_s, load.ui_tail_ms,
                    load.ui_asked_early, args.sessions,
                    load.app_cpu_ms_per_token, load.app_cpu_ms_per_token_total, load.app_idle_cpu_percent,
                    args.many_sessions, completed, fairness, psutil.cpu_count() or 0, page.ttft_runs_ms)
    print(report.render())
    print(f"(took {time.monotonic() - started:.0f} s, {len(runs)} run(s) of parts 1-3; the last one shown)")
    code = gate.exit_code(best, report.hard_misses())
    print(json.dumps({**report.figures(), "runs_taken": len(runs),
                      "timings_each_run": [{t.name: round(t.value, 4) for t in timings(*run, args.sessions)}
                                           for run in runs],
                      "timings_best": {t.name: round(t.value, 4) for t in best}}))
    return code


def page_misses(shown_tok_s: float, engine_tok_s: float) -> list[tuple[bool, str]]:
    """The shown rate, a hard gate: the page keeps up with the engine."""
    ratio = shown_tok_s / engine_tok_s
    return [(ratio >= SHOWN_RATE_TARGET, f"shown/engine rate {ratio:.3f} < {SHOWN_RATE_TARGET}")]


def timings(page: PageFigures, load: ConcurrencyFigures, sessions: int) -> list[Timing]:
    """The figures a busy machine moves: best of up to 3 runs, failing in CI only past twice their target."""
    return [Timing("TTFT added by the UI", page.ttft_ui_ms - page.ttft_direct_ms, ADDED_TTFT_TARGET_MS, " ms"),
            Timing(f"{sessions} UI sessions' throughput over direct", load.ui_tok_s / load.direct_tok_s,
                   CONCURRENT_TARGET, ratio=True),
            Timing("app CPU per streamed token above idle", load.app_cpu_ms_per_token, APP_CPU_TARGET_MS, " ms")]


if __name__ == "__main__":
    sys.exit(main())
