"""The probe helper runs real programs and reads real files, and answers every failure as data."""

import sys
import time

from launch.probe import read_text, run_command


def test_command_output_is_returned():
    result = run_command([sys.executable, "-c", "print('hello')"])
    assert result.ok
    assert result.text == "hello\n"


def test_missing_program_is_an_error_not_an_exception(tmp_path):
    result = run_command([str(tmp_path / "no-such-python"), "-c", "pass"])
    assert not result.ok
    assert "cannot run" in result.error and "no-such-python" in result.error


def test_non_executable_file_is_an_error(tmp_path):
    script = tmp_path / "plain.txt"
    script.write_text("not a program")
    result = run_command([str(script)])
    assert not result.ok and "cannot run" in result.error


def test_non_zero_exit_reports_the_code_and_stderr():
    result = run_command([sys.executable, "-c", "import sys; print('partial'); sys.exit('broken install')"])
    assert not result.ok
    assert "exited with 1" in result.error and "broken install" in result.error
    assert result.text == "partial\n"


def test_hanging_program_is_stopped_at_the_timeout():
    started = time.monotonic()
    result = run_command([sys.executable, "-c", "import time; time.sleep(30)"], timeout_s=0.5)
    assert time.monotonic() - started < 10
    assert not result.ok and "did not answer within 0.5 s" in result.error


def test_file_text_is_read(tmp_path):
    path = tmp_path / "cpulist"
    path.write_text("0-3\n")
    assert read_text(path).text == "0-3\n"


def test_unreadable_file_is_an_error_not_an_exception(tmp_path):
    missing = read_text(tmp_path / "absent")
    directory = read_text(tmp_path)
    assert not missing.ok and "absent" in missing.error
    assert not directory.ok and "cannot read" in directory.error
