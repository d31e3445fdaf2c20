"""Issue 9 #4: the engine API key at rest and in flight — 0600 files in 0700 folders, never on the engine's
command line (sglang 0.7.2 reads it from a `--config` YAML file), never in the log view, its export or the
command preview. Real processes: the simulated engine enforces the key it was given."""

import stat
from pathlib import Path

import httpx
import psutil
import pytest

from launch.command import Engine, build_command, masked_argv
from launch.config_file import merge_config_file, secret_config_path, write_secret_config
from launch.last_good import LastGood
from launch.preflight import free_port
from launch.profile import Profile, ProfileStore
from launch.run_state import RunState, state_path, write_run_state
from launch.settings import LaunchSettings
from launch.sim.args import parse_sim_args
from launch.supervisor import EngineState, Supervisor
from m3ui.access import AccessPolicy
from m3ui.admin.form import form_values, read_form
from m3ui.admin.host import HostSurvey
from m3ui.admin.log_view import export_log
from m3ui.admin.model_info import ModelShapes
from m3ui.admin.review import KEY_ON_ARGV, review_form
from m3ui.services import AppServices, simulated_settings
from tests.test_supervisor import fake_engine

KEY = "sk-secret-7f3a9c"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_profiles_last_good_and_the_state_file_are_0600_in_0700_folders(tmp_path):
    data = tmp_path / "data"
    settings = LaunchSettings(model_path="/m", api_key=KEY)
    store = ProfileStore(data / "profiles")
    store.save(Profile("p", settings))
    assert mode(store.path_for("p")) == 0o600 and mode(data / "profiles") == 0o700
    last_good = LastGood(data)
    last_good.record(tmp_path / "run", settings, Engine())
    assert mode(last_good.path) == 0o600 and mode(data) == 0o700
    write_run_state(data, RunState(1, 1, 0.0, 1, 0.0, tmp_path, "http://x", settings, Engine()))
    assert mode(state_path(data)) == 0o600


def test_an_existing_open_folder_is_tightened_when_a_profile_is_saved(tmp_path):
    folder = tmp_path / "profiles"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    ProfileStore(folder).save(Profile("p", LaunchSettings(api_key=KEY)))
    assert mode(folder) == 0o700


def test_the_preview_masks_the_key_and_the_launched_argv_carries_a_private_config_file_instead(tmp_path):
    settings = LaunchSettings(model_path="/m", api_key=KEY)
    preview = build_command(settings)
    assert KEY in preview.argv and KEY not in preview.shell_text()  # the argv stays exact; only the text masks
    launched = build_command(settings, run_dir=tmp_path)
    assert KEY not in " ".join(launched.argv) and "--api-key" not in launched.argv
    assert launched.argv[-2:] == ("--config", str(secret_config_path(tmp_path)))
    write_secret_config(tmp_path, KEY)
    assert mode(secret_config_path(tmp_path)) == 0o600
    assert parse_sim_args(launched.argv[3:]).settings.api_key == KEY  # parsed as sglang parses it


def test_with_a_config_file_of_the_operators_own_the_key_stays_on_argv_and_the_admin_is_told(tmp_path):
    settings = LaunchSettings(model_path="/m", api_key=KEY, extra_args="--config /etc/mine.yaml")
    assert KEY in build_command(settings, run_dir=tmp_path).argv
    review = review_form(read_form(form_values(settings)), Engine("sim"), HostSurvey(), ModelShapes())
    assert KEY_ON_ARGV in review.findings and "(ps)" in KEY_ON_ARGV.message
    plain = settings.replace(extra_args="")
    review = review_form(read_form(form_values(plain)), Engine("sim"), HostSurvey(), ModelShapes())
    assert KEY_ON_ARGV not in review.findings


def test_sglangs_config_merge_puts_the_file_first_so_the_command_line_wins(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("api-key: from-file\nport: 1\nenable-metrics: true\n")
    assert merge_config_file(["--port", "2", "--config", str(config)]) == [
        "--api-key", "from-file", "--port", "1", "--enable-metrics", "--port", "2"]
    with pytest.raises(ValueError, match="Multiple config files"):
        merge_config_file(["--config", str(config), "--config", str(config)])
    with pytest.raises(ValueError, match="YAML"):
        merge_config_file(["--config", str(tmp_path / "c.json")])


def test_masked_argv_covers_both_spellings():
    assert masked_argv(["--api-key", "k", "--admin-api-key=j", "--port", "1"]) == [
        "--api-key", "********", "--admin-api-key=********", "--port", "1"]


PRINTS_ITS_ARGS = '''
log(f"server_args=ServerArgs(api_key={KEY!r}, port={PORT})")
serve_and_get_ready()
while True:
    time.sleep(1)
'''


def test_a_launched_engine_never_shows_the_key_in_ps_the_log_view_or_the_export(tmp_path):
    sup = Supervisor(tmp_path / "m3ui", tick_s=0.05)
    try:
        info = sup.start(LaunchSettings(model_path="/m", host="127.0.0.1", port=free_port(), api_key=KEY),
                         fake_engine(tmp_path, PRINTS_ITS_ARGS))
        assert sup.wait_ready(15), sup.snapshot().diagnosis  # the stand-in demands the key it read from the file
        assert not secret_config_path(info.run_dir).exists()  # read at start-up: not kept once it serves
        family = [psutil.Process(info.pid), *psutil.Process(info.pid).children(recursive=True)]
        assert not any(KEY in " ".join(p.cmdline()) for p in family)
        assert f"api_key='{KEY}'" in info.log_path.read_text()  # sglang's own print: kept on disk, but private
        assert mode(info.log_path) == 0o600 and mode(info.run_dir) == 0o700 and mode(info.run_dir.parent) == 0o700
        assert mode(info.run_dir / "command.sh") == 0o600 and KEY not in (info.run_dir / "command.sh").read_text()
        assert any("api_key='********'" in line for line in sup.log_tail(50))
        assert not any(KEY in line for line in sup.log_tail(50))
        exported = export_log(info.log_path, info.run_dir.name, into=tmp_path, secrets=(KEY,))
        assert KEY not in exported.read_text() and "api_key='********'" in exported.read_text()
        assert mode(exported) == 0o600 and mode(exported.parent) == 0o700  # the rest of the log is private too
    finally:
        sup.close(grace=1)


def test_the_simulated_engine_enforces_a_key_it_got_through_the_config_file(tmp_path, monkeypatch):
    monkeypatch.setenv("M3UI_SIM_STARTUP_SECONDS", "0.3")
    sup = Supervisor(tmp_path / "m3ui", tick_s=0.05)
    try:
        info = sup.start(simulated_settings().replace(api_key=KEY), Engine("sim"))
        assert sup.wait_ready(30), sup.snapshot().diagnosis
        assert KEY not in " ".join(psutil.Process(info.pid).cmdline())
        models = f"{info.url}/v1/models"
        assert httpx.get(models).status_code == 401
        assert httpx.get(models, headers={"Authorization": f"Bearer {KEY}"}).status_code == 200
    finally:
        sup.close(grace=1)
    assert sup.state is EngineState.STOPPED


def test_the_app_tightens_what_an_older_version_left_readable(tmp_path):
    data = tmp_path / "data"
    (data / "profiles").mkdir(parents=True)
    (data / "runs" / "20261130-101010").mkdir(parents=True)
    for path in (data / "profiles" / "p.json", data / "last-good.json"):
        path.write_text("{}")
        path.chmod(0o644)
    for folder in (data, data / "profiles", data / "runs", data / "runs" / "20261130-101010"):
        folder.chmod(0o755)
    services = AppServices.create(data, AccessPolicy("127.0.0.1", None))
    services.close()
    assert mode(data) == mode(data / "runs") == mode(data / "runs" / "20261130-101010") == 0o700
    assert mode(data / "profiles") == 0o700
    assert mode(data / "profiles" / "p.json") == mode(data / "last-good.json") == 0o600
