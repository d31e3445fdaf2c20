"""Following the engine's log file: whole lines, tqdm redraws, partial writes."""

from launch.engine_log import LogFollower


def append(path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def test_lines_arrive_once_complete_and_partial_writes_wait_for_their_newline(tmp_path):
    log = tmp_path / "engine.log"
    follower = LogFollower(log)
    assert follower.read_new() == []  # no file yet
    append(log, b"first\nsec")
    assert follower.read_new() == ["first"]
    append(log, b"ond\n")
    assert follower.read_new() == ["second"]
    assert follower.tail(10) == ("first", "second")


def test_tqdm_redraws_overwrite_the_last_buffered_line_but_each_reaches_the_reader(tmp_path):
    log = tmp_path / "engine.log"
    follower = LogFollower(log)
    append(log, b"before\n\rbar 0/2\rbar 1/2\r")
    assert follower.read_new() == ["before", "bar 0/2"]  # the last \r may begin a \r\n: held back
    append(log, b"\rbar 2/2\nafter\n")
    assert follower.read_new() == ["bar 1/2", "bar 2/2", "after"]
    assert follower.tail(10) == ("before", "bar 2/2", "after")


def test_a_split_crlf_is_one_line_break(tmp_path):
    log = tmp_path / "engine.log"
    follower = LogFollower(log)
    append(log, b"one\r")
    follower.read_new()
    append(log, b"\ntwo\r\n")
    follower.read_new()
    assert follower.tail(10) == ("one", "two")


def test_final_read_flushes_an_unterminated_last_line(tmp_path):
    log = tmp_path / "engine.log"
    follower = LogFollower(log)
    append(log, b"Traceback (most recent call last):\nEOFError")
    assert follower.read_new() == ["Traceback (most recent call last):"]
    assert follower.read_new(final=True) == ["EOFError"]


def test_tail_filters_case_insensitively_and_keeps_the_newest(tmp_path):
    log = tmp_path / "engine.log"
    follower = LogFollower(log, max_lines=3)
    append(log, b"".join(f"line {i} Decode batch\n".encode() for i in range(5)) + b"other\n")
    follower.read_new()
    assert follower.tail(10) == ("line 3 Decode batch", "line 4 Decode batch", "other")
    assert follower.tail(1, "decode BATCH") == ("line 4 Decode batch",)
    assert follower.tail(0) == ()
