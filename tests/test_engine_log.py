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


POLLS = [
    '[2026-11-29 19:07:20] INFO:     127.0.0.1:50312 - "GET /health HTTP/1.1" 200',
    '[2026-11-29 19:07:20] INFO:     127.0.0.1:50312 - "GET /v1/models HTTP/1.1" 200',
    '[2026-11-29 19:07:20] INFO:     127.0.0.1:50314 - "GET /v1/loads HTTP/1.1" 200',
    '[2026-11-29 19:07:21] INFO:     127.0.0.1:50316 - "GET /metrics HTTP/1.1" 200',
    '[2026-11-29 19:07:21] INFO:     127.0.0.1:50318 - "POST /dump_expert_distribution_record HTTP/1.1" 200',
]
CHAT = '[2026-11-29 19:07:22] INFO:     127.0.0.1:50320 - "POST /v1/chat/completions HTTP/1.1" 200'


def test_polling_requests_never_push_the_engines_own_lines_out_but_stay_on_disk_and_on_request(tmp_path):
    log = tmp_path / "engine.log"
    follower = LogFollower(log, max_lines=10)
    append(log, b"Load weight begin. avail mem=93.12 GB\n")
    append(log, ("\n".join(POLLS * 40) + "\n").encode())  # 200 polls, 20x the ring
    append(log, f"{CHAT}\n".encode())
    follower.read_new()
    assert follower.tail(10) == ("Load weight begin. avail mem=93.12 GB", CHAT)
    assert follower.tail(3, polling=True) == (POLLS[-2], POLLS[-1], CHAT)
    assert log.read_text().count('"GET /v1/loads') == 40  # the file keeps every line


def test_a_log_past_its_bound_is_copied_aside_and_emptied_while_the_writer_keeps_appending(tmp_path):
    log = tmp_path / "engine.log"
    follower = LogFollower(log, rotate_bytes=1000)
    seen = []
    with open(log, "ab", buffering=0) as writer:  # the engine's stdout: O_APPEND, never reopened
        for batch in range(10):
            writer.write(b"".join(b"batch %d line %03d %s\n" % (batch, n, b"x" * 40) for n in range(10)))
            seen += follower.read_new()
        writer.write(b"after the last rotation\n")
        seen += follower.read_new(final=True)
    assert len(seen) == 101 and seen[-1] == "after the last rotation"  # every line reached the reader once
    assert log.stat().st_size < 2000 and (tmp_path / "engine.log.1").stat().st_size < 2000  # bounded on disk
    assert (tmp_path / "engine.log.1").stat().st_mode & 0o777 == 0o600
    assert log.read_text().endswith("after the last rotation\n")  # appends land in the emptied file


def test_a_log_truncated_by_someone_else_is_read_afresh(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text("one\ntwo\n")
    follower = LogFollower(log)
    assert follower.read_new() == ["one", "two"]
    log.write_text("three\n")
    assert follower.read_new() == ["three"]
