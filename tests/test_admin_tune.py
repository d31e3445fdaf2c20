"""The Tune tab's logic refuses, with nothing relaunched, what the tuner could not run."""

from types import SimpleNamespace

from launch.command import Engine
from launch.presets import single_gpu
from launch.profile import ProfileStore
from launch.supervisor import EngineState, Supervisor
from m3ui.admin.tune import TuneDesk
from tests.speed_cli import HOSTS


def desk(tmp_path, monkeypatch, launched: bool) -> tuple[TuneDesk, Supervisor]:
    monkeypatch.setenv("M3UI_SIM_HOST", str(HOSTS / "two-socket-h200.json"))
    supervisor = Supervisor(tmp_path)
    link = SimpleNamespace(settings=single_gpu() if launched else None, engine=Engine("sim") if launched else None,
                           adopted=lambda settings, engine: None)
    services = SimpleNamespace(link=link, supervisor=supervisor, profiles=ProfileStore(tmp_path / "profiles"),
                               data_dir=tmp_path)
    return TuneDesk(services), supervisor


def test_without_a_launched_engine_there_is_nothing_to_tune(tmp_path, monkeypatch):
    tune, supervisor = desk(tmp_path, monkeypatch, launched=False)
    started, message = tune.start(30, ["kt_cpuinfer"])
    assert not started and "start one first" in message
    assert isinstance(tune.roofline(), str)
    assert supervisor.state is EngineState.STOPPED and tune.card().state == "idle"


def test_bad_budgets_and_knobs_are_refused_before_anything_relaunches(tmp_path, monkeypatch):
    tune, supervisor = desk(tmp_path, monkeypatch, launched=True)
    for budget in (None, 0, -5, 10**6):
        started, message = tune.start(budget, ["kt_cpuinfer"])
        assert not started and "budget must be between" in message
    started, message = tune.start(30, ["kt_cpuinfer", "api_key"])
    assert not started and "unknown knob(s) api_key" in message
    started, message = tune.start(30, [])
    assert not started and "unknown knob(s) (none given)" in message
    assert supervisor.state is EngineState.STOPPED and not (tmp_path / "runs").exists()
    assert tune.cancel() == "No tune is running."


def test_the_roofline_of_the_launched_settings_on_the_played_host(tmp_path, monkeypatch):
    tune, _ = desk(tmp_path, monkeypatch, launched=True)
    result, settings = tune.roofline()
    assert settings.kt_cpuinfer == 64 and result.rates.cpu_read_gbs == 480
    assert result.decode_tok_s["1"] > 0
