"""The admin app's wiring: every handler refuses non-admins before doing anything, every field's widget
round-trips its value through Gradio, and the cockpit renders each engine state."""

import os

import gradio as gr
import pytest

from launch.command import Engine
from launch.model_config import BUNDLED_M3_CONFIG, load_model_shape
from launch.phases import Phase
from launch.presets import preset
from launch.settings import LaunchSettings, setting_fields
from launch.sizing import memory_plan
from launch.supervisor import EngineState, SupervisorSnapshot
from m3ui.access import AccessPolicy
from m3ui.admin.form import FORM_FIELDS, form_values, read_form
from m3ui.engine_link import FLEET_ROUTER, EngineStatus
from m3ui.services import AppServices
from m3ui.ui.admin.form import build_settings_form
from m3ui.ui.admin.guard import API_PREFIX
from m3ui.ui.admin.sizing import render_plan
from m3ui.ui.admin.status import render_status
from m3ui.ui.admin.view import build_admin_app
from tests.test_admin_form import _other_value

assert os.environ.get("GRADIO_ANALYTICS_ENABLED") == "False"


@pytest.fixture
def admin(tmp_path):
    services = AppServices.create(tmp_path / "data", AccessPolicy("127.0.0.1", "secret"))
    try:
        yield services, build_admin_app(services)
    finally:
        services.close()


def _backend_fns(demo: gr.Blocks):
    return [fn for fn in demo.fns.values() if fn.fn is not None]


def test_every_admin_handler_is_named_private_and_guarded(admin):
    _, demo = admin
    fns = _backend_fns(demo)
    assert len(fns) >= 25
    for fn in fns:
        assert fn.api_name.startswith(API_PREFIX), fn.api_name
        assert fn.fn.__name__.startswith("guarded_"), fn.api_name
        assert fn.api_visibility == "private"


@pytest.mark.parametrize("user", [None, "bob", "Admin", ""])
def test_every_admin_handler_refuses_non_admins_before_doing_anything(admin, user):
    services, demo = admin
    for fn in _backend_fns(demo):
        dummy = [None] * len(fn.inputs)
        with pytest.raises(gr.Error) as refused:
            fn.fn(gr.Request(username=user), *dummy)
        assert "admin" in str(refused.value), fn.api_name
    assert services.supervisor.state is EngineState.STOPPED
    assert services.profiles.names() == [] and not (services.data_dir / "runs").exists()


def test_the_admin_user_is_let_through(admin):
    _, demo = admin
    log = next(fn for fn in _backend_fns(demo) if fn.api_name == API_PREFIX + "log")
    assert log.fn(gr.Request(username="admin"), "", False) == "(no engine log yet)"


def test_without_a_password_admin_works_only_because_the_app_listens_on_loopback(tmp_path):
    services = AppServices.create(tmp_path / "data", AccessPolicy("127.0.0.1", None))
    try:
        demo = build_admin_app(services)
        log = next(fn for fn in _backend_fns(demo) if fn.api_name == API_PREFIX + "log")
        assert log.fn(gr.Request(username=None), "", False) == "(no engine log yet)"
        services.policy = AccessPolicy("0.0.0.0", None)  # the same handlers, once the app faces a network
        demo = build_admin_app(services)
        log = next(fn for fn in _backend_fns(demo) if fn.api_name == API_PREFIX + "log")
        with pytest.raises(gr.Error):
            log.fn(gr.Request(username=None), "", False)
    finally:
        services.close()


@pytest.fixture(scope="module")
def form():
    with gr.Blocks():
        return build_settings_form()


@pytest.mark.parametrize("name", [f.name for f in setting_fields()])
def test_each_widget_round_trips_its_field_through_gradio(form, name):
    for settings in (LaunchSettings(), LaunchSettings().replace(**{name: _other_value(name)})):
        sent = [comp.preprocess(comp.postprocess(value)) for comp, value in zip(form.fields, form_values(settings),
                                                                                strict=True)]
        reading = read_form(sent)
        assert reading.ok, reading.errors
        assert reading.settings == settings
    assert [c.elem_id for c in form.fields] == [f"m3-field-{f.name}" for f in FORM_FIELDS]


def _snapshot(state: EngineState, phase: Phase | None, progress: float = 0.5) -> SupervisorSnapshot:
    return SupervisorSnapshot(state, "managed", phase, progress, "loading CPU experts of layer 9 (7/57 MoE layers)",
                              83.0, 123, "http://127.0.0.1:30000", None, None, (), None, None)


def _link(state: EngineState) -> EngineStatus:
    return EngineStatus("simulated", state, state is EngineState.READY, True, "", 0.5, "http://127.0.0.1:30000",
                        "MiniMax-M3")


def test_the_status_strip_shows_the_phase_progress_and_elapsed_time():
    html = render_status(_snapshot(EngineState.STARTING, Phase.LOADING_WEIGHTS, 0.4), _link(EngineState.STARTING))
    assert 'data-engine-state="starting"' in html and 'data-phase="loading weights"' in html
    assert "m3a-step-active" in html and "7/57 MoE layers" in html and "1m 23s" in html and "SIMULATED" in html
    assert 'aria-valuenow="40"' in html
    failed = render_status(_snapshot(EngineState.FAILED, Phase.KV_CACHE), _link(EngineState.FAILED))
    assert "m3a-step-failed" in failed
    stopped = render_status(_snapshot(EngineState.STOPPED, Phase.READY), _link(EngineState.STOPPED))
    assert "m3a-steps" not in stopped  # a stopped engine has no phase to show


def test_an_attached_fleet_router_is_named_as_such_in_the_strip_and_header():
    router = EngineStatus("attached", EngineState.READY, True, False, "", 1.0, "http://127.0.0.1:30000", "MiniMax-M3",
                          attached_as=FLEET_ROUTER)
    assert router.label == "Fleet router ready — MiniMax-M3 at http://127.0.0.1:30000"
    assert ">Fleet router<" in render_status(_snapshot(EngineState.READY, Phase.READY), router)
    plain = EngineStatus("attached", EngineState.READY, True, False, "", 1.0, "http://127.0.0.1:30000", "MiniMax-M3")
    assert plain.kind == "External engine"


def test_the_what_if_bar_names_each_verdict():
    shape = load_model_shape(None)
    for experts, verdict in ((4, "ok"), (60, "oom_at_load")):
        plan = memory_plan(shape, tp=1, gpu_bytes=96e9, mem_fraction=0.85, gpu_experts=experts,
                           prefill_threshold_on=True)
        html = render_plan(plan)
        assert f'data-verdict="{verdict}"' in html and "GPU experts" in html and "KV cache" in html
    assert "config.json" in render_plan(None)


def test_values_from_the_outside_are_escaped_in_every_rendering():
    evil = "<img src=x onerror=alert(1)>"
    snap = _snapshot(EngineState.STARTING, Phase.STARTING)
    html = render_status(SupervisorSnapshot(**{**snap.__dict__, "phase_detail": evil}), _link(EngineState.STARTING))
    assert evil not in html and "&lt;img" in html


def test_the_admin_app_builds_with_a_loaded_form(admin):
    services, demo = admin
    load = next(fn for fn in _backend_fns(demo) if fn.api_name == API_PREFIX + "load")
    values = load.fn(gr.Request(username="admin"))
    assert values[0] == "sim" and values[2] == str(BUNDLED_M3_CONFIG.parent)  # engine kind, model path
    assert preset("single-gpu").kt_num_gpu_experts in values
    assert Engine("sim") == Engine(values[0])


def _fn(demo: gr.Blocks, name: str):
    return next(fn for fn in _backend_fns(demo) if fn.api_name == API_PREFIX + name).fn


def test_the_timer_sends_only_what_changed(admin):
    _, demo = admin
    tick = _fn(demo, "tick")
    first = tick(gr.Request(username="admin"), {}, "", False, False)
    status, seen = first[0], first[-1]
    assert 'data-engine-state="stopped"' in status and first[6] == "(no engine log yet)"
    again = tick(gr.Request(username="admin"), seen, "", False, False)
    skipped = gr.skip()
    assert again[:8] == [skipped] * 8  # status, outcome, the diagnosis' four outputs, log, download progress


def test_fetching_config_json_points_the_form_at_the_new_folder(admin, tmp_path, monkeypatch):
    from huggingface_hub import constants as hf_constants

    from tests.hub_standin import REPO_ID, StandInHub

    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    _, demo = admin
    fields = form_values(preset("single-gpu", "/nowhere"))
    with StandInHub() as hub:
        out = _fn(demo, "weights_config")(gr.Request(username="admin"), REPO_ID, str(tmp_path / "m3"), "main",
                                          hub.endpoint, "", "sim", "", *fields)
    assert "config.json" in out[0]
    kind, python, model_path, kt_weight_path = out[1:5]
    assert model_path == kt_weight_path == str(tmp_path / "m3") and (tmp_path / "m3" / "config.json").is_file()
