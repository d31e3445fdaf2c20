"""The settings table is the single source: every field round-trips through profiles, --set and coercion."""

import dataclasses
import json

import pytest

from launch.command import Engine
from launch.presets import preset, with_expert_monitoring
from launch.profile import Profile, ProfileError, ProfileStore, load_profile, profile_from_json, save_profile
from launch.settings import (
    FIELD_BY_FLAG,
    LaunchSettings,
    SettingsError,
    coerce,
    from_mapping,
    parse_assignment,
    setting_fields,
    to_mapping,
)


def test_every_flag_field_has_a_unique_flag_help_and_group():
    fields = setting_fields()
    flags = [f.spec.flag for f in fields]
    assert len(flags) == len(set(flags))
    for f in fields:
        assert f.spec.flag == "--" + f.name.replace("_", "-")
        assert f.spec.help and f.spec.help.endswith(".")
        if f.spec.choices and f.default is not None:
            assert f.default in f.spec.choices


def test_issue_fields_are_all_present():
    wanted = [
        "model-path", "kt-weight-path", "kt-method", "kt-cpuinfer", "kt-threadpool-count", "kt-numa-nodes",
        "kt-num-gpu-experts", "kt-gpu-experts-ratio", "kt-gpu-prefill-token-threshold",
        "kt-max-deferred-experts-per-token", "kt-expert-placement-strategy", "init-expert-location",
        "kt-enable-dynamic-expert-update", "tp-size", "quantization", "moe-runner-backend",
        "trust-remote-code", "host", "port", "mem-fraction-static", "chunked-prefill-size",
        "cuda-graph-max-bs", "max-running-requests", "max-total-tokens", "tool-call-parser",
        "reasoning-parser", "served-model-name", "api-key", "enable-metrics",
        "expert-distribution-recorder-mode", "expert-distribution-recorder-buffer-size",
        "record-kt-gpu-expert-distribution",
    ]
    assert {f"--{w}" for w in wanted} <= set(FIELD_BY_FLAG)
    assert "extra_args" in {f.name for f in dataclasses.fields(LaunchSettings)}


def _full_settings() -> LaunchSettings:
    return with_expert_monitoring(preset("single-gpu", "/models/m3")).replace(
        kt_numa_nodes=(0, 1), kt_gpu_experts_ratio=0.25, kt_max_deferred_experts_per_token=2,
        init_expert_location="/x/dump.pt", kt_enable_dynamic_expert_update=True, max_running_requests=8,
        max_total_tokens=65536, api_key="k'ey", extra_args="--watchdog-timeout 600")


def test_profile_round_trips_every_field_exactly(tmp_path):
    prof = Profile("my box", _full_settings(), Engine("sglang", "/opt/venv/bin/python"), start_with_app=True)
    path = tmp_path / "p.json"
    save_profile(prof, path)
    assert load_profile(path) == prof
    assert json.loads(path.read_text())["settings"]["kt_numa_nodes"] == [0, 1]


def test_profile_rejects_unknown_settings_and_foreign_files():
    doc = {"format": "m3ui-profile/1", "name": "x", "settings": {"kt_cpuinfr": 3}}
    with pytest.raises(ProfileError, match="unknown setting 'kt_cpuinfr'"):
        profile_from_json(json.dumps(doc))
    with pytest.raises(ProfileError, match="not an m3ui profile"):
        profile_from_json('{"settings": {}}')
    with pytest.raises(ProfileError, match="not valid JSON"):
        profile_from_json("{")
    with pytest.raises(ProfileError, match="engine must be an object"):
        profile_from_json(json.dumps({**doc, "settings": {}, "engine": "sim"}))


def test_profile_names_cannot_escape_the_folder(tmp_path):
    store = ProfileStore(tmp_path)
    for bad in ("../etc/passwd", "a/b", "", " lead", ".hidden"):
        with pytest.raises(ProfileError):
            store.path_for(bad)


def test_store_keeps_a_single_startup_profile(tmp_path):
    store = ProfileStore(tmp_path)
    store.save(Profile("a", LaunchSettings(), start_with_app=True))
    store.save(Profile("b", LaunchSettings(), start_with_app=True))
    assert store.startup_profile().name == "b"
    assert not store.load("a").start_with_app
    store.delete("b")
    assert store.names() == ["a"]


def test_mapping_round_trip_and_coercion_errors():
    s = _full_settings()
    assert from_mapping(to_mapping(s)) == s
    assert coerce("tp_size", "8") == 8
    assert coerce("kt_numa_nodes", "0, 1") == (0, 1)
    assert coerce("trust_remote_code", "true") is True
    assert coerce("mem_fraction_static", "") is None
    for name, bad in [("tp_size", "eight"), ("tp_size", 1.5), ("port", True), ("tp_size", ""),
                      ("trust_remote_code", "maybe"), ("kt_numa_nodes", "0 x"), ("mem_fraction_static", "nan"),
                      ("kt_gpu_experts_ratio", "inf"), ("mem_fraction_static", True)]:
        with pytest.raises(SettingsError):
            coerce(name, bad)


def test_set_assignment_accepts_names_and_flags():
    assert parse_assignment("kt-num-gpu-experts=8") == ("kt_num_gpu_experts", 8)
    assert parse_assignment("--port=9000") == ("port", 9000)
    with pytest.raises(SettingsError, match="field=value"):
        parse_assignment("port")
    with pytest.raises(SettingsError, match="unknown setting"):
        parse_assignment("nope=1")
