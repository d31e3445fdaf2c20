"""The admin form: every field round-trips between settings and widgets; bad input is reported on its field
and loses nothing; the preview is the very text `python -m launch command` prints."""

import subprocess
import sys
from pathlib import Path

import pytest

from launch.command import Engine
from launch.model_config import BUNDLED_M3_CONFIG
from launch.presets import preset, with_expert_monitoring
from launch.profile import Profile, save_profile
from launch.settings import LaunchSettings, setting_fields
from m3ui.admin.form import EXTRA_ARGS, FIELD_INDEX, FORM_FIELDS, form_values, read_engine, read_form
from m3ui.admin.host import HostSurvey
from m3ui.admin.model_info import ModelShapes
from m3ui.admin.presets import SITE_FIELDS, apply_preset
from m3ui.admin.review import review_form

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = str(BUNDLED_M3_CONFIG.parent)


def _other_value(name: str):
    """A valid value different from the field's default, for every kind of field."""
    fld = next(f for f in setting_fields() if f.name == name)
    spec = fld.spec
    if spec.kind == "bool":
        return not fld.default
    if spec.choices:
        return next(c for c in spec.choices if c != fld.default)
    return {"int": 7, "float": 0.42, "int_list": (0, 1), "secret": "s3cr3t'key",
            "path": "/models/m 3", "str": "name with spaces"}[spec.kind]


def test_every_settings_field_has_exactly_one_form_field_and_extra_args_is_last():
    names = [f.name for f in FORM_FIELDS]
    assert names[:-1] == [f.name for f in setting_fields()]
    assert names[-1] == EXTRA_ARGS


@pytest.mark.parametrize("name", [f.name for f in setting_fields()])
def test_each_field_round_trips_through_its_widget_value(name):
    settings = LaunchSettings().replace(**{name: _other_value(name)})
    reading = read_form(form_values(settings))
    assert reading.ok, reading.errors
    assert reading.settings == settings


def test_a_full_profile_and_the_empty_settings_round_trip():
    full = with_expert_monitoring(preset("tp8-hybrid", "/m")).replace(
        kt_numa_nodes=(0, 1), kt_gpu_experts_ratio=0.3, api_key="k", extra_args="--context-length 65536")
    for settings in (full, LaunchSettings()):
        assert read_form(form_values(settings)).settings == settings


def test_whole_numbers_sent_as_floats_are_read_as_ints_and_fractions_are_refused():
    values = list(form_values(LaunchSettings()))
    values[FIELD_INDEX["kt_num_gpu_experts"]] = 8.0
    assert read_form(values).settings.kt_num_gpu_experts == 8
    values[FIELD_INDEX["kt_num_gpu_experts"]] = 8.5
    reading = read_form(values)
    assert [f.field for f in reading.errors] == ["kt_num_gpu_experts"]
    assert "not a valid int" in reading.errors[0].message


def test_unreadable_fields_are_reported_on_their_field_and_keep_the_base_value_while_the_rest_is_read():
    base = preset("single-gpu", "/m")
    values = list(form_values(base))
    values[FIELD_INDEX["kt_numa_nodes"]] = "0 one"
    values[FIELD_INDEX["host"]] = ""
    values[FIELD_INDEX["tp_size"]] = 2
    reading = read_form(values, base)
    assert {f.field for f in reading.errors} == {"kt_numa_nodes", "host"}
    assert all(f.level == "error" and f.fix for f in reading.errors)
    assert reading.settings.host == base.host and reading.settings.kt_numa_nodes == base.kt_numa_nodes
    assert reading.settings.tp_size == 2  # the readable edit is kept


def test_a_cleared_dropdown_and_empty_number_leave_the_field_unset():
    values = list(form_values(preset("single-gpu", "/m")))
    values[FIELD_INDEX["tool_call_parser"]] = None
    values[FIELD_INDEX["kt_cpuinfer"]] = None
    settings = read_form(values).settings
    assert settings.tool_call_parser is None and settings.kt_cpuinfer is None


def test_engine_choice_defaults_to_python_on_path_and_refuses_unknown_kinds():
    assert read_engine("sglang", "  ") == Engine("sglang", "python")
    assert read_engine("sim", "/venv/bin/python") == Engine("sim", "/venv/bin/python")
    with pytest.raises(ValueError):
        read_engine("bash", "")


def _cli_command(tmp_path: Path, settings: LaunchSettings, engine: Engine) -> str:
    path = tmp_path / "p.json"
    save_profile(Profile("preview", settings, engine), path)
    out = subprocess.run([sys.executable, "-m", "launch", "command", "--profile", str(path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.rstrip("\n")


NASTY = "x; rm -rf / $(touch PWNED) `id` 'single' \"double\" \\ | & > <"


def test_the_preview_is_exactly_what_the_cli_prints(tmp_path):
    cases = [
        (preset("single-gpu", BUNDLED), Engine("sim")),
        (with_expert_monitoring(preset("tp8-hybrid", "/data/M3 model")).replace(
            served_model_name=NASTY, api_key="k$(id)", extra_args="--context-length 65536 --watchdog-timeout 600"),
         Engine("sglang", "/opt/sglang venv/bin/python")),
    ]
    for settings, engine in cases:
        review = review_form(read_form(form_values(settings)), engine, HostSurvey(), ModelShapes())
        assert review.command_text == _cli_command(tmp_path, settings, engine)


def test_shell_metacharacters_stay_one_literal_argument_and_line_breaks_are_refused():
    settings = preset("single-gpu", BUNDLED).replace(served_model_name=NASTY)
    review = review_form(read_form(form_values(settings)), Engine("sim"), HostSurvey(), ModelShapes())
    assert not review.for_field("served_model_name")
    from launch.command import build_command

    argv = build_command(review.settings, Engine("sim")).argv
    assert argv[argv.index("--served-model-name") + 1] == NASTY
    broken = read_form(form_values(settings.replace(served_model_name="a\nb")))
    review = review_form(broken, Engine("sim"), HostSurvey(), ModelShapes())
    assert review.blocking
    assert "line break" in review.for_field("served_model_name")[0].message


def test_a_preset_keeps_the_sites_model_address_key_and_monitoring():
    mine = with_expert_monitoring(LaunchSettings(model_path="/srv/m3", kt_weight_path="/srv/m3", host="10.0.0.5",
                                                 port=30123, api_key="k", extra_args="--watchdog-timeout 9"))
    applied = apply_preset("tp8-hybrid", mine)
    assert {f: getattr(applied, f) for f in SITE_FIELDS} == {f: getattr(mine, f) for f in SITE_FIELDS}
    assert (applied.tp_size, applied.kt_num_gpu_experts, applied.mem_fraction_static) == (8, 40, 0.55)
    fresh = apply_preset("single-gpu", LaunchSettings(model_path="/srv/m3"))
    assert fresh.kt_weight_path == "/srv/m3"  # the preset's own choice when the form had none
