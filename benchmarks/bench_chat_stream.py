"""What streaming through the UI costs, measured end to end on `python app.py` with the simulated engine.

1. Shown rate: a ~4000-token answer after 20 earlier messages, in real Chromium: tokens per second the page
   shows (first answer text on screen -> last token on screen) against the rate the engine streamed that
   very answer (the decode tok/s of the answer's stats line).
2. Time to first token the UI adds: click Send -> first answer text on screen, against a direct openai-SDK
   request for the same messages (medians; both paths hit the engine's prefix cache alike).
3. Concurrency: 16 browser sessions (Gradio API clients, one session each) streaming at once, total tokens
   per second, against 16 direct openai-SDK streams at once.

Run from the repo root: `python benchmarks/bench_chat_stream.py [--check]`. `--check` exits 1 when a target
is missed. The engine rate is set with M3UI_SIM_DECODE_TPS; the report prints the rate it really reached.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import openai  # noqa: E402

from launch.sim.tokens import count_tokens  # noqa: E402
from tests.app_process import running_app  # noqa: E402
from tests.browser import chromium_page  # noqa: E402

# All-CPU-experts decode speed of the simulated KT hybrid; with the reference preset's GPU hit share the
# engine then streams one request at about 1000 tok/s (if the machine can pace it that fast).
DECODE_TPS = "975"
SHOWN_RATE_TARGET = 0.90  # shown tok/s / engine tok/s
ADDED_TTFT_TARGET_S = 0.25
# UI sessions' total tok/s / direct clients' total tok/s. Listeners serialized by Gradio's default limit of one
# would give ~1/16. Below 1.0 on a small machine: the UI path spends CPU (the openai SDK's parsing of every
# chunk in the app, Gradio's updates, the API clients' decoding here) that the CPU-paced simulated engine,
# on the same cores, then lacks; the report prints the app's CPU per token.
CONCURRENT_TARGET = 0.50
TIMEOUT_MS = 120_000

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
  document.querySelector('#m3-send').click();
}"""


@dataclass(frozen=True)
class Report:
    engine_tok_s: float
    shown_tok_s: float
    answer_tokens: int
    ttft_direct_s: float
    ttft_ui_s: float
    concurrent_direct_tok_s: float
    concurrent_ui_tok_s: float
    sessions: int
    app_cpu_ms_per_token: float  # the app process's CPU while the UI sessions streamed

    @property
    def shown_ratio(self) -> float:
        return self.shown_tok_s / self.engine_tok_s

    @property
    def added_ttft_s(self) -> float:
        return self.ttft_ui_s - self.ttft_direct_s

    @property
    def concurrent_ratio(self) -> float:
        return self.concurrent_ui_tok_s / self.concurrent_direct_tok_s

    def misses(self) -> list[str]:
        checks = [
            (self.shown_ratio >= SHOWN_RATE_TARGET, f"shown/engine rate {self.shown_ratio:.2f} < {SHOWN_RATE_TARGET}"),
            (self.added_ttft_s <= ADDED_TTFT_TARGET_S,
             f"TTFT added by the UI {self.added_ttft_s * 1000:.0f} ms > {ADDED_TTFT_TARGET_S * 1000:.0f} ms"),
            (self.concurrent_ratio >= CONCURRENT_TARGET,
             f"{self.sessions} sessions' throughput ratio {self.concurrent_ratio:.2f} < {CONCURRENT_TARGET}"),
        ]
        return [message for ok, message in checks if not ok]

    def render(self) -> str:
        return "\n".join([
            f"shown rate      {self.shown_tok_s:7.0f} tok/s in the browser vs {self.engine_tok_s:.0f} tok/s from the "
            f"engine ({self.answer_tokens} tokens): {self.shown_ratio:.1%}  (target >= {SHOWN_RATE_TARGET:.0%})",
            f"TTFT            {self.ttft_ui_s * 1000:7.0f} ms through the UI vs {self.ttft_direct_s * 1000:.0f} ms "
            f"direct: +{self.added_ttft_s * 1000:.0f} ms  (target <= {ADDED_TTFT_TARGET_S * 1000:.0f} ms)",
            f"concurrency     {self.concurrent_ui_tok_s:7.0f} tok/s for {self.sessions} UI sessions vs "
            f"{self.concurrent_direct_tok_s:.0f} tok/s for {self.sessions} direct clients: {self.concurrent_ratio:.1%}"
            f"  (target >= {CONCURRENT_TARGET:.0%}); app CPU {self.app_cpu_ms_per_token:.2f} ms per token",
        ])


def count_prompt(tokens: int) -> tuple[str, str]:
    """A "Count to N" question whose answer is about `tokens` long, and the answer's last token."""
    n = 1
    while count_tokens(", ".join(map(str, range(1, n + 1))) + ".") < tokens:
        n += max(1, (tokens - count_tokens(", ".join(map(str, range(1, n + 1))))) // 4)
    return f"Count to {n}", f"{n}."


def direct_client(engine_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{engine_url}/v1", api_key="EMPTY", max_retries=0, timeout=120)


def direct_stream(client: openai.OpenAI, prompt: str) -> tuple[float, int]:
    """(time to first content token, completion tokens) of one direct streaming request."""
    started = time.monotonic()
    first, tokens = None, 0
    stream = client.chat.completions.create(
        model="MiniMax-M3", messages=[{"role": "user", "content": prompt}], stream=True, max_tokens=8192,
        stream_options={"include_usage": True}, extra_body={"chat_template_kwargs": {"thinking_mode": "disabled"}})
    for chunk in stream:
        if chunk.usage is not None:
            tokens = chunk.usage.completion_tokens
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = time.monotonic() - started
    return first or float("nan"), tokens


def ask_in_page(page: object, prompt: str, marker: str) -> dict[str, float]:
    page.fill("#m3-message textarea", prompt)  # type: ignore[attr-defined]
    page.evaluate(WATCH_ANSWER, [prompt, marker])  # type: ignore[attr-defined]
    try:
        page.wait_for_function("window.__bench.done !== null", timeout=TIMEOUT_MS)  # type: ignore[attr-defined]
    except Exception:
        print(f"no {marker!r} in the answer to {prompt!r}; the chat shows:\n"
              + page.inner_text("#m3-chatbot")[-2000:], file=sys.stderr)  # type: ignore[attr-defined]
        raise
    page.wait_for_selector("#m3-send", state="visible", timeout=TIMEOUT_MS)  # type: ignore[attr-defined]
    return page.evaluate("window.__bench")  # type: ignore[attr-defined, no-any-return]


def engine_url_in_header(page: object) -> str:
    page.wait_for_selector("#m3-header", timeout=TIMEOUT_MS)  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        "document.querySelector('#m3-header').innerText.includes('ready')", timeout=TIMEOUT_MS)
    header = page.inner_text("#m3-header")  # type: ignore[attr-defined]
    return re.search(r"at (http://127\.0\.0\.1:\d+)", header).group(1)  # type: ignore[union-attr]


def measure_page(app_url: str, answer_tokens: int, history: int, ttft_runs: int
                 ) -> tuple[str, float, float, int, float, float]:
    """(engine URL, engine tok/s, shown tok/s, answer tokens, direct TTFT, UI TTFT)"""
    prompt, marker = count_prompt(answer_tokens)
    with chromium_page() as page:
        page.goto(app_url)  # type: ignore[attr-defined]
        page.wait_for_selector("#m3-message textarea", timeout=TIMEOUT_MS)  # type: ignore[attr-defined]
        engine_url = engine_url_in_header(page)
        client = direct_client(engine_url)
        page.locator(".m3-thinking-mode").get_by_label("Disabled", exact=True).check()  # type: ignore[attr-defined]
        ui_ttft, direct_ttft = [], []
        for _ in range(ttft_runs):
            page.click("#m3-new-chat")  # type: ignore[attr-defined]
            times = ask_in_page(page, "Count to 3", "3.")
            ui_ttft.append((times["first"] - times["t0"]) / 1000)
            direct_ttft.append(direct_stream(client, "Count to 3")[0])
        page.click("#m3-new-chat")  # type: ignore[attr-defined]
        for i in range(history // 2):
            ask_in_page(page, f"What is {i} + {i}?", f"{2 * i}")
        times = ask_in_page(page, prompt, marker)
        stats = page.locator("#m3-chatbot .m3-stats").last.inner_text()  # type: ignore[attr-defined]
    engine_rate = float(re.search(r"([\d.]+) tok/s", stats).group(1))  # type: ignore[union-attr]
    tokens = int(re.search(r"→ (\d+) tokens", stats).group(1))  # type: ignore[union-attr]
    shown_rate = tokens / ((times["done"] - times["first"]) / 1000)
    return engine_url, engine_rate, shown_rate, tokens, statistics.median(direct_ttft), statistics.median(ui_ttft)


def concurrent(sessions: int, run_one) -> float:  # type: ignore[no-untyped-def]
    """Total completion tokens per second of `sessions` calls of run_one() started together."""
    tokens = [0] * sessions
    barrier = threading.Barrier(sessions + 1)

    def worker(i: int) -> None:
        barrier.wait()
        tokens[i] = run_one()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(sessions)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.monotonic()
    for thread in threads:
        thread.join(TIMEOUT_MS / 1000)
    return sum(tokens) / (time.monotonic() - started)


def measure_concurrency(app_url: str, app_pid: int, engine_url: str, sessions: int, answer_tokens: int
                        ) -> tuple[float, float, float]:
    """(direct tok/s, UI tok/s, app CPU ms per token during the UI part)"""
    import psutil
    from gradio_client import Client

    prompt, _ = count_prompt(answer_tokens)
    client = direct_client(engine_url)
    direct = concurrent(sessions, lambda: direct_stream(client, prompt)[1])
    ui_clients = [Client(app_url, verbose=False, download_files=False) for _ in range(sessions)]  # a session each
    pending = iter(ui_clients)
    lock = threading.Lock()

    def through_ui() -> int:
        with lock:
            ui = next(pending)
        outputs = ui.predict(prompt, "disabled", 0.6, 0.95, 8192, False, "", api_name="/send")
        chat = outputs[0]  # the library as the browser stores it
        state = chat if isinstance(chat, dict) else json.loads(chat)
        active = next(c for c in state["chats"] if c["id"] == state["active"])
        return int(active["conversation"]["turns"][-1]["stats"]["completion_tokens"])

    app = psutil.Process(app_pid)
    cpu_before, started = sum(app.cpu_times()[:2]), time.monotonic()
    ui_rate = concurrent(sessions, through_ui)
    cpu_ms = (sum(app.cpu_times()[:2]) - cpu_before) * 1000
    return direct, ui_rate, cpu_ms / (ui_rate * (time.monotonic() - started))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--answer-tokens", type=int, default=4000)
    parser.add_argument("--history", type=int, default=20, help="earlier messages before the long answer")
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--session-tokens", type=int, default=600, help="answer length per concurrent session")
    parser.add_argument("--ttft-runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = parser.parse_args(argv)
    env = {"M3UI_SIM_DECODE_TPS": os.environ.get("M3UI_SIM_DECODE_TPS", DECODE_TPS)}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="m3ui-bench-") as tmp, running_app(Path(tmp), env=env) as app:
        engine, engine_rate, shown_rate, tokens, ttft_direct, ttft_ui = measure_page(
            app.url, args.answer_tokens, args.history, args.ttft_runs)
        direct, ui, cpu = measure_concurrency(app.url, app.process.pid, engine, args.sessions, args.session_tokens)
    report = Report(engine_rate, shown_rate, tokens, ttft_direct, ttft_ui, direct, ui, args.sessions, cpu)
    print(report.render())
    if args.json:
        print(json.dumps(asdict(report)))
    print(f"(took {time.monotonic() - started:.0f} s)")
    misses = report.misses()
    for miss in misses:
        print(f"MISSED: {miss}", file=sys.stderr)
    return 1 if args.check and misses else 0


if __name__ == "__main__":
    sys.exit(main())
