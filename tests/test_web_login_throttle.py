"""LoginThrottle on a fake clock: a few free failures, then exponential waits, per client and per user,
cleared by a success, with bounded memory (issue 9 #2)."""

from m3ui.web import login_throttle
from m3ui.web.login_throttle import FREE_FAILURES, MAX_DELAY_S, LoginThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_failures_beyond_the_free_ones_wait_longer_each_time():
    clock = Clock()
    throttle = LoginThrottle(clock)
    keys = throttle.keys("10.0.0.1", "admin")
    for _ in range(FREE_FAILURES - 1):
        throttle.failed(keys)
        assert throttle.wait_seconds(keys) == 0
    waits = []
    for _ in range(4):
        throttle.failed(keys)
        waits.append(throttle.wait_seconds(keys))
    assert waits == [2.0, 4.0, 8.0, 16.0]
    clock.now += 10
    assert throttle.wait_seconds(keys) == 6.0
    for _ in range(40):
        throttle.failed(keys)
    assert throttle.wait_seconds(keys) == MAX_DELAY_S


def test_a_user_is_throttled_from_any_client_and_a_client_for_any_user():
    throttle = LoginThrottle(Clock())
    for _ in range(FREE_FAILURES):
        throttle.failed(throttle.keys("10.0.0.1", "admin"))
    assert throttle.wait_seconds(throttle.keys("10.0.0.2", "admin")) > 0, "same user, other client"
    assert throttle.wait_seconds(throttle.keys("10.0.0.1", "bob")) > 0, "same client, other user"
    assert throttle.wait_seconds(throttle.keys("10.0.0.2", "bob")) == 0


def test_a_success_clears_the_record():
    throttle = LoginThrottle(Clock())
    keys = throttle.keys("10.0.0.1", "admin")
    for _ in range(FREE_FAILURES):
        throttle.failed(keys)
    throttle.succeeded(keys)
    assert throttle.wait_seconds(keys) == 0
    assert throttle.failed(keys) == 1


def test_memory_stays_bounded(monkeypatch):
    monkeypatch.setattr(login_throttle, "MAX_TRACKED", 50)
    throttle = LoginThrottle(Clock())
    for n in range(500):
        throttle.failed(throttle.keys(f"10.0.{n // 250}.{n % 250}", f"user{n}"))
    assert len(throttle._records) == 50
