"""One test per validation rule, bad and good; generated settings never crash validation or yield a command."""

import socket

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from launch.command import Engine
from launch.findings import has_errors
from launch.model_config import BUNDLED_M3_CONFIG, load_model_shape
from launch.preflight import check_engine_packages, check_paths, check_port, plan_launch
from launch.presets import preset, with_expert_monitoring
from launch.settings import LaunchSettings, setting_fields
from launch.validation import HostFacts, validate

M3 = load_model_shape(None)
HOST = HostFacts(gpu_count=8, gpu_bytes=96e9, compute_capability=(9, 0), physical_cores=64, logical_cores=128,
                 numa_node_ids=(0, 1), ram_bytes=1536e9)
GOOD = preset("single-gpu", "/m").replace(host="127.0.0.1", kt_cpuinfer=64)

# (rule, change to GOOD, host facts or None for HOST, expected level, expected field)
CASES = [
    ("choices", dict(kt_method="MXFP9"), None, "error", "kt_method"),
    ("choices", dict(tool_call_parser="minimax"), None, "error", "tool_call_parser"),
    ("range", dict(mem_fraction_static=1.5), None, "error", "mem_fraction_static"),
    ("range", dict(port=0), None, "error", "port"),
    ("range", dict(kt_gpu_experts_ratio=1.5, kt_num_gpu_experts=None), None, "error", "kt_gpu_experts_ratio"),
    ("empty", dict(served_model_name=""), None, "error", "served_model_name"),
    ("argv", dict(served_model_name="--port"), None, "error", "served_model_name"),
    ("argv", dict(model_path="/m\n--evil"), None, "error", "model_path"),
    ("argv", dict(api_key="a b"), None, "error", "api_key"),
    ("kt_active", dict(kt_weight_path=None), None, "error", "kt_weight_path"),
    ("gpu_experts_one_of", dict(kt_num_gpu_experts=None), None, "error", "kt_num_gpu_experts"),
    ("gpu_experts_one_of", dict(kt_gpu_experts_ratio=0.1), None, "warning", "kt_gpu_experts_ratio"),
    ("gpu_experts_range", dict(kt_num_gpu_experts=129), None, "error", "kt_num_gpu_experts"),
    ("kt_method", dict(kt_method=None), None, "error", "kt_method"),
    ("cpuinfer", dict(kt_cpuinfer=None), None, "error", "kt_cpuinfer"),
    ("cpuinfer", dict(kt_cpuinfer=129), None, "error", "kt_cpuinfer"),
    ("cpuinfer", dict(kt_cpuinfer=96), None, "warning", "kt_cpuinfer"),
    ("numa", dict(kt_numa_nodes=(0,)), None, "error", "kt_numa_nodes"),
    ("numa", dict(kt_numa_nodes=(0, 7)), None, "error", "kt_numa_nodes"),
    ("numa", dict(kt_threadpool_count=4), None, "warning", "kt_threadpool_count"),
    ("tp", dict(tp_size=16), None, "error", "tp_size"),
    ("tp", dict(tp_size=4), HostFacts(2, 96e9, (9, 0), 64, 128, (0, 1), 1536e9), "error", "tp_size"),
    ("tp", {}, HostFacts(0, None, None, 64, 128, (0, 1), 1536e9), "error", "tp_size"),
    ("sm90", {}, HostFacts(8, 96e9, (8, 0), 64, 128, (0, 1), 1536e9), "warning", "quantization"),
    ("memory", dict(kt_num_gpu_experts=40), None, "error", "kt_num_gpu_experts"),
    ("memory", dict(mem_fraction_static=0.3), None, "error", "mem_fraction_static"),
    ("memory", dict(mem_fraction_static=0.95), None, "error", "mem_fraction_static"),
    ("memory", dict(mem_fraction_static=None), None, "warning", "mem_fraction_static"),
    ("ram", {}, HostFacts(8, 96e9, (9, 0), 64, 128, (0, 1), 256e9), "error", "kt_weight_path"),
    ("host", dict(host="bad host!"), None, "error", "host"),
    ("api_key", dict(host="0.0.0.0"), None, "warning", "api_key"),
    ("parsers", dict(tool_call_parser=None), None, "warning", "tool_call_parser"),
    ("parsers", dict(reasoning_parser="qwen3"), None, "warning", "reasoning_parser"),
    ("trust_remote_code", dict(trust_remote_code=False), None, "error", "trust_remote_code"),
    ("recorder", dict(record_kt_gpu_expert_distribution=True), None, "error", "record_kt_gpu_expert_distribution"),
    ("recorder", dict(expert_distribution_recorder_mode="stat", expert_distribution_recorder_buffer_size=0), None,
     "error", "expert_distribution_recorder_buffer_size"),
    ("placement", dict(kt_expert_placement_strategy="frequency"), None, "error", "init_expert_location"),
    ("placement", dict(kt_enable_dynamic_expert_update=True), None, "warning", "kt_enable_dynamic_expert_update"),
    ("placement", dict(kt_enable_dynamic_expert_update=True, kt_method="MOE_INT4", kt_gpu_prefill_token_threshold=None),
     None, "warning", "kt_enable_dynamic_expert_update"),
    ("extra_args", dict(extra_args="--no-such-flag 1"), None, "error", "extra_args"),
    ("extra_args", dict(extra_args="--port 9"), None, "error", "extra_args"),
    ("extra_args", dict(extra_args="--watchdog-timeout 'x"), None, "error", "extra_args"),
    ("extra_args", dict(extra_args="600 --watchdog-timeout"), None, "error", "extra_args"),
]


def test_the_good_baseline_has_no_findings():
    assert validate(GOOD, M3, HOST) == []
    assert validate(with_expert_monitoring(GOOD).replace(extra_args="--watchdog-timeout 600"), M3, HOST) == []


@pytest.mark.parametrize("rule,change,host,level,field", CASES, ids=[f"{c[0]}-{c[4]}-{i}" for i, c in
                                                                      enumerate(CASES)])
def test_rule_reports_the_bad_value_with_a_fix(rule, change, host, level, field):
    findings = [f for f in validate(GOOD.replace(**change), M3, host or HOST) if f.check == rule]
    assert findings, f"rule {rule} found nothing"
    hit = [f for f in findings if f.field == field and f.level == level]
    assert hit, findings
    assert hit[0].message and (hit[0].fix or level == "warning")


def test_fix_changes_make_the_finding_go_away():
    for rule, change, host, _level, _field in CASES:
        bad = GOOD.replace(**change)
        for finding in validate(bad, M3, host or HOST):
            if finding.check == rule and finding.changes and rule in ("memory", "cpuinfer", "tp", "recorder"):
                fixed = bad.replace(**dict(finding.changes))
                assert not [f for f in validate(fixed, M3, host or HOST)
                            if f.check == rule and f.field == finding.field and f.level == "error"], (rule, finding)


def test_preflight_paths(tmp_path):
    assert check_paths(GOOD.replace(kt_weight_path=str(tmp_path / "none")), Engine())[0].check == "kt_weight_path"
    assert "no .safetensors" in check_paths(GOOD.replace(kt_weight_path=str(tmp_path)), Engine())[0].message
    (tmp_path / "model-00001.safetensors").write_bytes(b"")
    assert check_paths(GOOD.replace(kt_weight_path=str(tmp_path)), Engine()) == []
    assert check_paths(GOOD.replace(kt_weight_path=str(tmp_path), init_expert_location=str(tmp_path / "x.pt")),
                       Engine())[0].field == "init_expert_location"


def test_preflight_port_busy_suggests_a_free_one():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        (finding,) = check_port("127.0.0.1", port)
        assert finding.field == "port" and "already in use" in finding.message
        new_port = dict(finding.changes)["port"]
        assert new_port != port and check_port("127.0.0.1", new_port) == []


def test_preflight_engine_python_must_have_sglang_kt():
    from launch.hardware import detect_hardware

    report = detect_hardware("/no/such/python")
    assert check_engine_packages(report, Engine("sglang", "/no/such/python"))[0].check == "engine_python"
    assert check_engine_packages(report, Engine("sim")) == []


def test_plan_for_the_sim_uses_the_bundled_model_and_yields_a_command():
    bundled = str(BUNDLED_M3_CONFIG.parent)
    plan = plan_launch(GOOD.replace(model_path=bundled, kt_weight_path=bundled, port=_free()), Engine("sim"))
    assert plan.ok and plan.command.argv[1:3] == ("-m", "launch.sim"), plan.findings
    bad = plan_launch(GOOD.replace(model_path="/no/model", port=_free()), Engine("sim"))
    assert bad.command is None and any(f.check == "model_path" for f in bad.findings)


def _free() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _value_strategy(fld):
    spec = fld.spec
    junk = st.one_of(st.none(), st.text(max_size=12))
    if spec.kind == "bool":
        return st.booleans()
    if spec.kind == "int":
        return st.one_of(st.none(), st.integers(-10, 10**6)) if fld.default is None else st.integers(-10, 10**6)
    if spec.kind == "float":
        floats = st.floats(-2, 2, allow_nan=False)
        return st.one_of(st.none(), floats) if fld.default is None else floats
    if spec.kind == "int_list":
        return st.one_of(st.none(), st.tuples(st.integers(-2, 9)), st.tuples(st.integers(0, 3), st.integers(0, 3)))
    if spec.choices:
        choice = st.sampled_from(spec.choices)
        return st.one_of(st.none(), choice, junk) if fld.default is None else st.one_of(choice, st.text(max_size=8))
    return junk if fld.default is None else st.text(max_size=12)


SETTINGS = st.builds(LaunchSettings, **{f.name: _value_strategy(f) for f in setting_fields()},
                     extra_args=st.one_of(st.just(""), st.text(max_size=20)))


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SETTINGS)
def test_generated_settings_never_crash_validation_and_invalid_ones_get_no_command(settings):
    findings = validate(settings, M3, HOST)
    plan = plan_launch(settings.replace(port=1), Engine("sim"))  # port 1 is privileged/busy-free: checked
    if has_errors(findings):
        assert plan.command is None
    if plan.command is not None:
        assert not has_errors(plan.findings)


@pytest.mark.parametrize("field", ["mem_fraction_static", "kt_gpu_experts_ratio"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_fractions_are_range_errors_not_crashes(field, value):
    findings = validate(GOOD.replace(**{field: value}), M3, HOST)
    assert any(f.field == field and f.check == "range" for f in findings)


def test_paths_under_an_unknown_user_home_are_reported_missing_not_raised():
    odd = "~no-such-user-m3ui/x"
    assert [f.check for f in check_paths(GOOD.replace(kt_weight_path=odd, init_expert_location=odd),
                                         Engine())] == ["kt_weight_path", "init_expert_location"]
    findings = plan_launch(GOOD.replace(model_path=odd), Engine("sim")).findings
    assert any(f.check == "model_path" and "does not exist" in f.message for f in findings)
