"""Hardware detection: parsers on captured /proc and /sys text, real probes of this machine, the doctor text."""

import dataclasses
import importlib.metadata
import subprocess
import sys
from pathlib import Path

import pynvml
import pytest
from hypothesis import given
from hypothesis import strategies as st

from launch.cpuinfo import (
    format_cpulist,
    parse_cpuinfo,
    parse_cpulist,
    parse_node_mem_total,
    pick_kt_kernel_isa,
    supports_mxfp8,
)
from launch.hardware import (
    CpuReport,
    GpuInfo,
    GpuReport,
    HardwareReport,
    MemoryReport,
    NumaNode,
    PackageVersions,
    _nvml_start_failure,
    detect_cpu,
    detect_gpus,
    detect_hardware,
    detect_memory,
    detect_packages,
    format_report,
    parse_package_versions,
    read_numa_nodes,
    read_socket_count,
)

DATA = Path(__file__).parent / "data" / "hardware"
ROOT = Path(__file__).resolve().parent.parent


def cpuinfo(name: str) -> str:
    return (DATA / name).read_text()


# ---------------------------------------------------------------- cpulist


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0-3,8-11\n", (0, 1, 2, 3, 8, 9, 10, 11)),
        ("0\n", (0,)),
        ("\n", ()),  # a memory-only NUMA node
        ("", ()),
        ("5,3,1", (1, 3, 5)),
        ("0-2,1-3", (0, 1, 2, 3)),
        (" 56-59 ,168 ", (56, 57, 58, 59, 168)),
    ],
)
def test_cpulist_is_expanded_to_sorted_cpu_ids(text, cpus):
    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize("text", ["a-b", "3-1", "-1", "0-", "0;1", "1-2-3"])
def test_malformed_cpulist_is_rejected(text):
    with pytest.raises(ValueError):
        parse_cpulist(text)


@given(st.sets(st.integers(min_value=0, max_value=600), max_size=80))
def test_formatted_cpulist_parses_back_to_the_same_cpus(cpus):
    text = format_cpulist(tuple(cpus))
    assert parse_cpulist(text) == tuple(sorted(cpus))


def test_cpulist_is_formatted_as_compact_ranges():
    assert format_cpulist((0, 1, 2, 3, 8, 112, 113)) == "0-3,8,112-113"


# ---------------------------------------------------------------- /proc/cpuinfo and the ISA


def test_two_socket_sapphire_rapids_implies_the_amx_build():
    info = parse_cpuinfo(cpuinfo("cpuinfo_spr_8480_2s_excerpt.txt"))
    assert info.model_name == "Intel(R) Xeon(R) Platinum 8480+"
    assert info.sockets == 2
    assert {"amx_tile", "amx_int8", "amx_bf16", "avx512_bf16", "avx512vbmi"} <= info.flags
    assert "ept_x_only" not in info.flags  # from the "vmx flags" line, not the CPU flags
    assert pick_kt_kernel_isa(info.flags) == "amx"
    assert supports_mxfp8(info.flags)


def test_captured_kvm_guest_cpuinfo_is_parsed():
    info = parse_cpuinfo(cpuinfo("cpuinfo_kvm_2vcpu.txt"))
    assert info.model_name == "Intel(R) Xeon(R) Processor"
    assert info.sockets == 1
    assert pick_kt_kernel_isa(info.flags) == "amx"


def test_captured_h200_host_cpuinfo_is_parsed():
    info = parse_cpuinfo(cpuinfo("cpuinfo_h200_host.txt"))  # a 16-vCPU Firecracker guest beside one H200
    assert info.model_name == "Intel(R) Xeon(R) Processor"
    assert info.sockets == 1
    assert pick_kt_kernel_isa(info.flags) == "amx"
    assert supports_mxfp8(info.flags)


def test_arm_cpuinfo_has_no_kt_kernel_build():
    text = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics\n"
    info = parse_cpuinfo(text)
    assert (info.model_name, info.sockets, info.flags) == (None, None, frozenset())
    assert pick_kt_kernel_isa(info.flags) == "none"
    assert not supports_mxfp8(info.flags)


# Excerpts of real flags lines (kernel order, unrelated flags left out) of CPU generations kt-kernel tells apart.
@pytest.mark.parametrize(
    ("flags", "variant", "mxfp8"),
    [
        ("fma avx2 avx512f avx512dq avx512ifma avx512cd avx512bw avx512vl avx512_bf16 avx512vbmi avx512_vbmi2"
         " avx512_vnni avx512_bitalg avx512_vpopcntdq", "avx512_bf16", True),  # AMD EPYC 9654 (Zen 4)
        ("fma avx2 avx512f avx512dq avx512ifma avx512cd avx512bw avx512vl avx512vbmi avx512_vbmi2 avx512_vnni",
         "avx512_vbmi", True),  # Xeon Platinum 8380 (Ice Lake-SP)
        ("fma avx2 avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni avx512_bf16",
         "avx512_vnni", True),  # Xeon 8380H (Cooper Lake): BF16 but no VBMI
        ("fma avx2 avx512f avx512dq avx512cd avx512bw avx512vl", "avx512_base", True),  # Xeon 8180 (Skylake-SP)
        ("fma avx2 sha_ni", "avx2", True),  # AMD EPYC 7763 (Zen 3)
        ("sse4_2 avx2", "avx2", False),  # no FMA: no MXFP8 fallback
        ("sse4_2 avx", "none", False),  # Sandy Bridge
        ("amx_tile amx_int8 fma avx2 avx512f avx512bw avx512_vnni avx512vbmi", "avx512_vbmi", True),  # AMX without BF16
    ],
)
def test_kt_kernel_build_follows_its_own_ordering(flags, variant, mxfp8):
    flag_set = frozenset(flags.split())
    assert pick_kt_kernel_isa(flag_set) == variant
    assert supports_mxfp8(flag_set) is mxfp8


def test_cpu_report_of_this_machine_mirrors_its_cpuinfo():
    report = detect_cpu()
    expected = parse_cpuinfo(Path("/proc/cpuinfo").read_text())
    assert report.kt_kernel_isa == pick_kt_kernel_isa(expected.flags)
    assert report.isa_flags <= expected.flags
    assert "avx2" in report.isa_flags and "sse2" not in report.isa_flags
    assert report.logical_cores and report.physical_cores and report.usable_cpus
    assert report.usable_cpus <= report.logical_cores
    assert report.numa_nodes and report.errors == ()


def test_unreadable_cpuinfo_gives_unknown_isa_not_a_guess(tmp_path):
    report = detect_cpu(cpuinfo_path=tmp_path / "cpuinfo", node_root=tmp_path / "node", cpu_root=tmp_path)
    assert report.kt_kernel_isa == "unknown"
    assert report.mxfp8_capable is None
    assert report.model_name is None and report.sockets is None
    assert any("CPU model and ISA unknown" in e for e in report.errors)
    assert any("NUMA nodes unknown" in e for e in report.errors)


def test_sockets_come_from_sysfs_when_cpuinfo_has_no_physical_id(tmp_path):
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fma avx2\n")
    for cpu, package in ((0, 0), (1, 0), (2, 1), (3, 1)):
        topology = tmp_path / "cpu" / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "physical_package_id").write_text(f"{package}\n")
    (tmp_path / "cpu" / "cpufreq").mkdir()  # sysfs has non-CPU entries beside cpuN
    assert read_socket_count(tmp_path / "cpu") == 2
    report = detect_cpu(tmp_path / "cpuinfo", tmp_path / "node", tmp_path / "cpu")
    assert report.sockets == 2 and report.kt_kernel_isa == "avx2"


def test_socket_count_is_unknown_without_topology(tmp_path):
    assert read_socket_count(tmp_path) is None


# ---------------------------------------------------------------- NUMA sysfs


def make_node(root: Path, node_id: int, cpulist: str, mem_kb: int | None) -> None:
    node = root / f"node{node_id}"
    node.mkdir(parents=True)
    (node / "cpulist").write_text(cpulist)
    if mem_kb is not None:
        (node / "meminfo").write_text(f"Node {node_id} MemTotal:       {mem_kb} kB\nNode {node_id} MemFree:  1 kB\n")


def test_numa_nodes_are_read_in_numeric_order_with_cpus_and_memory(tmp_path):
    make_node(tmp_path, 0, "0-55,112-167\n", 528_000_000)
    make_node(tmp_path, 1, "56-111,168-223\n", 528_400_000)
    make_node(tmp_path, 10, "\n", 268_000_000)  # CXL memory expander: no CPUs
    for entry in ("online", "possible", "has_cpu"):
        (tmp_path / entry).write_text("0-1,10\n")
    (tmp_path / "power").mkdir()
    nodes, error = read_numa_nodes(tmp_path)
    assert error is None
    assert [n.id for n in nodes] == [0, 1, 10]
    assert nodes[0].cpus == (*range(0, 56), *range(112, 168))
    assert nodes[1].mem_total_bytes == 528_400_000 * 1024
    assert nodes[2] == NumaNode(10, (), 268_000_000 * 1024)


def test_numa_node_without_meminfo_has_unknown_memory(tmp_path):
    make_node(tmp_path, 0, "0-3", None)
    nodes, error = read_numa_nodes(tmp_path)
    assert error is None and nodes == (NumaNode(0, (0, 1, 2, 3), None),)


@pytest.mark.parametrize("broken", ["missing root", "no nodes", "bad cpulist", "no cpulist"])
def test_unreadable_numa_layout_is_an_error_not_an_exception(tmp_path, broken):
    root = tmp_path / "node"
    if broken != "missing root":
        root.mkdir()
    if broken == "bad cpulist":
        make_node(root, 0, "0-x", 100)
    if broken == "no cpulist":
        (root / "node0").mkdir()
    nodes, error = read_numa_nodes(root)
    assert nodes == ()
    assert error.startswith("NUMA nodes unknown")


def test_this_machines_numa_nodes_cover_its_cpus():
    nodes, error = read_numa_nodes()
    assert error is None
    all_cpus = {cpu for node in nodes for cpu in node.cpus}
    assert len(all_cpus) == len(parse_cpulist(Path("/sys/devices/system/cpu/online").read_text()))
    assert all(node.mem_total_bytes for node in nodes if node.cpus)


def test_node_meminfo_total_is_parsed_from_captured_text():
    captured = "Node 0 MemTotal:        7301324 kB\nNode 0 MemFree:         5258780 kB\n"
    assert parse_node_mem_total(captured) == 7301324 * 1024
    assert parse_node_mem_total("Node 0 MemFree: 1 kB\n") is None


# ---------------------------------------------------------------- memory


def test_memory_is_read_from_this_machine():
    memory = detect_memory()
    assert memory.error is None
    assert 0 < memory.available_bytes <= memory.total_bytes


# ---------------------------------------------------------------- engine packages


def test_engine_packages_are_read_from_the_venv_python():
    packages = detect_packages(sys.executable)
    assert packages.error is None
    assert packages.python == sys.executable
    assert packages.python_version == sys.version.split()[0]
    assert packages.versions["torch"] == importlib.metadata.version("torch")
    assert packages.versions["sglang-kt"] is None
    assert set(packages.versions) == {"sglang-kt", "kt-kernel", "torch", "sglang"}


def test_engine_packages_are_found_by_their_dist_info_without_importing(tmp_path, monkeypatch):
    for dist, name in (("sglang_kt-0.7.2", "sglang-kt"), ("kt_kernel-0.7.2", "kt-kernel")):
        info = tmp_path / f"{dist}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.7.2\n")
    (tmp_path / "sglang").mkdir()
    (tmp_path / "sglang" / "__init__.py").write_text("raise SystemExit('imported!')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    packages = detect_packages(sys.executable)
    assert packages.error is None
    assert packages.versions["sglang-kt"] == "0.7.2" and packages.versions["kt-kernel"] == "0.7.2"


def test_missing_engine_python_is_an_error_not_an_exception(tmp_path):
    packages = detect_packages(str(tmp_path / "envs" / "kt" / "bin" / "python"))
    assert packages.versions == {}
    assert packages.error.startswith("engine packages unknown: cannot run")


def test_program_that_is_not_python_gives_an_unexpected_answer_error():
    packages = detect_packages("/bin/echo")  # runs, exits 0, prints its arguments
    assert packages.error.startswith("/bin/echo gave an unexpected answer")


def test_package_answer_is_the_last_line_after_startup_noise():
    text = 'sitecustomize: hello\n{"python": "3.11.7", "versions": {"torch": "2.9.1+cu128", "sglang-kt": null}}\n'
    packages = parse_package_versions("/opt/kt/bin/python", text)
    assert packages == PackageVersions("/opt/kt/bin/python", "3.11.7", {"torch": "2.9.1+cu128", "sglang-kt": None})


@pytest.mark.parametrize("text", ["", "Traceback ...", '{"python": "3.11"}', "[1, 2]"])
def test_garbled_package_answer_is_an_error(text):
    packages = parse_package_versions("py", text)
    assert packages.error and packages.versions == {}


# ---------------------------------------------------------------- GPUs


def test_gpu_detection_on_this_machine_answers_without_raising():
    report = detect_gpus()
    if report.status == "ok":  # a GPU host
        assert report.gpus and report.driver_version and report.error is None
        assert all(g.memory_total_bytes > 0 and g.compute_capability >= (7, 0) for g in report.gpus)
    else:
        assert report.status == "no_gpu" and report.gpus == ()
        assert report.error.startswith("no NVIDIA GPU: ")


def test_cuda_visible_devices_is_recorded(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert detect_gpus().cuda_visible_devices == "2,3"


@pytest.mark.parametrize(
    ("code", "status", "words"),
    [
        (pynvml.NVML_ERROR_LIBRARY_NOT_FOUND, "no_gpu", "libnvidia-ml.so.1"),
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "no_gpu", "driver is not loaded"),
        (pynvml.NVML_ERROR_NO_PERMISSION, "unknown", "NVML could not start"),
    ],
)
def test_nvml_start_failures_are_told_apart(code, status, words):
    report = _nvml_start_failure(pynvml.NVMLError(code), "0")
    assert report.status == status and words in report.error
    assert report.cuda_visible_devices == "0"


def test_os_error_loading_nvml_is_unknown_not_a_crash():
    report = _nvml_start_failure(OSError("libnvidia-ml.so.1: wrong ELF class"), None)
    assert report.status == "unknown" and "wrong ELF class" in report.error


# ---------------------------------------------------------------- whole report and the doctor text


def test_detect_hardware_end_to_end_on_this_machine():
    report = detect_hardware()
    assert report.packages.python == sys.executable
    text = format_report(report)
    for heading in ("GPUs (NVML)", "CPU: ", "kt-kernel build: ", "NUMA: ", "RAM: ", "Engine packages in "):
        assert heading in text
    if report.gpu.status != "ok":
        assert "m3ui will use the simulated engine" in text


def test_module_prints_the_doctor_report():
    done = subprocess.run([sys.executable, "-m", "launch.hardware"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("GPUs (NVML)") and "Engine packages in" in done.stdout


# NVML's answer on a real H200 host (nvidia-smi there: 143771 MiB, 143156 MiB free, driver 580.159.04, CUDA 13.0).
H200 = GpuInfo(0, "NVIDIA H200", (9, 0), 150_754_820_096, 150_109_880_320, "GPU-f4ad2a2e-b200-a10d-2f0c-e0c248be0004")
SPR_CPU = CpuReport(
    model_name="Intel(R) Xeon(R) Platinum 8480+", sockets=2, physical_cores=112, logical_cores=224, usable_cpus=224,
    numa_nodes=(NumaNode(0, tuple(range(56)), 540 * 2**30), NumaNode(1, tuple(range(56, 112)), 540 * 2**30)),
    isa_flags=frozenset({"amx_tile", "avx2"}), kt_kernel_isa="amx", mxfp8_capable=True,
)
ENGINE = PackageVersions("/opt/kt/bin/python", "3.11.7",
                         {"sglang-kt": "0.7.2", "kt-kernel": "0.7.2", "torch": "2.9.1+cu128", "sglang": None})
GOOD = HardwareReport(GpuReport("ok", (H200,), "580.159.04", "13.0"), SPR_CPU, MemoryReport(2**40, 2**39), ENGINE)


def test_healthy_gpu_host_report_has_no_problems():
    text = format_report(GOOD)
    assert "GPUs (NVML): driver 580.159.04, CUDA 13.0" in text
    assert "[0] NVIDIA H200, sm_90, 140.4 GiB, 139.8 GiB free, GPU-f4ad2a2e-b200-a10d-2f0c-e0c248be0004" in text
    assert "2 sockets, 112 cores, 224 threads, 224 CPUs usable" in text
    assert "node 1: CPUs 56-111 (56), 540.0 GiB" in text
    assert "RAM: 1024.0 GiB total, 512.0 GiB available" in text
    assert "sglang-kt 0.7.2" in text
    assert "!" not in text and "hint:" not in text


def problems_of(report: HardwareReport) -> str:
    text = format_report(report)
    assert text.count("  ! ") == text.count("    hint: ")  # every problem carries a hint
    return text


def test_cpu_problems_are_explained():
    cpu = dataclasses.replace(
        SPR_CPU, usable_cpus=8, kt_variant_override="AVX2", kt_kernel_isa="none", mxfp8_capable=False,
        numa_nodes=(NumaNode(2, (), None),), errors=("NUMA nodes unknown: x",),
    )
    text = problems_of(dataclasses.replace(GOOD, cpu=cpu))
    assert "no AVX2: kt-kernel has no build for this CPU" in text
    assert "MXFP8 backend not available" in text
    assert "KT_KERNEL_CPU_VARIANT=AVX2 overrides" in text
    assert "may use only 8 of 224 CPUs" in text and "--kt-cpuinfer" in text
    assert "node 2: no CPUs (memory only), unknown" in text
    assert "! NUMA nodes unknown: x" in text


def test_unknown_isa_is_shown_as_unknown_not_as_missing():
    cpu = dataclasses.replace(SPR_CPU, isa_flags=frozenset(), kt_kernel_isa="unknown", mxfp8_capable=None,
                              errors=("CPU model and ISA unknown: cannot read /proc/cpuinfo",))
    text = problems_of(dataclasses.replace(GOOD, cpu=cpu))
    assert "ISA: unknown" in text and "kt-kernel build: unknown; MXFP8 experts: unknown" in text
    assert "! CPU model and ISA unknown" in text and "no AVX2" not in text


def test_matching_variant_override_is_not_a_problem():
    cpu = dataclasses.replace(SPR_CPU, kt_variant_override="amx")
    assert "!" not in format_report(dataclasses.replace(GOOD, cpu=cpu))


@pytest.mark.parametrize(
    ("versions", "problem"),
    [
        ({"sglang-kt": None, "kt-kernel": "0.7.2", "torch": "2.9.1", "sglang": "0.5.6"}, "upstream sglang 0.5.6"),
        ({"sglang-kt": "0.7.2", "kt-kernel": "0.7.2", "torch": "2.9.1", "sglang": "0.5.6"}, "both sglang-kt and"),
        ({"sglang-kt": None, "kt-kernel": "0.7.2", "torch": "2.9.1", "sglang": None}, "sglang-kt is not installed"),
        ({"sglang-kt": "0.7.2", "kt-kernel": None, "torch": "2.9.1", "sglang": None}, "kt-kernel is not installed"),
        ({"sglang-kt": "0.7.2", "kt-kernel": "0.7.2", "torch": None, "sglang": None}, "torch is not installed"),
        ({"sglang-kt": "0.7.2", "kt-kernel": "0.7.2", "torch": "2.13.0+cpu", "sglang": None}, "torch 2.13.0+cpu is"),
    ],
)
def test_package_problems_are_explained(versions, problem):
    packages = dataclasses.replace(ENGINE, versions=versions)
    text = problems_of(dataclasses.replace(GOOD, packages=packages))
    assert f"! {problem}" in text


def test_missing_gpu_memory_and_python_are_explained():
    report = HardwareReport(
        GpuReport("no_gpu", error="no NVIDIA GPU: the NVIDIA driver is not loaded", cuda_visible_devices="0"),
        SPR_CPU, MemoryReport(None, None, "RAM unknown: boom"),
        PackageVersions("/nope/python", error="engine packages unknown: cannot run /nope/python"),
    )
    text = problems_of(report)
    assert "! no NVIDIA GPU: the NVIDIA driver is not loaded" in text
    assert "m3ui will use the simulated engine" in text
    assert "CUDA_VISIBLE_DEVICES=0" in text
    assert "! RAM unknown: boom" in text
    assert "! engine packages unknown: cannot run /nope/python" in text
