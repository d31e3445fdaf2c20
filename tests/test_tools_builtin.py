"""The built-in demo tools: stable made-up weather, unit conversion, time zones, bundled doc search."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from m3ui.tools import builtin_tools
from m3ui.tools.clock import current_time
from m3ui.tools.docs_search import DOCS_DIR, DocIndex, search_docs
from m3ui.tools.units import convert_units
from m3ui.tools.validate import parameters_problem
from m3ui.tools.weather import get_weather


def test_weather_is_stable_per_city_and_says_it_is_demo_data():
    paris = get_weather("Paris", days=3)
    assert paris == get_weather("  paris ", days=3).replace("paris", "Paris")
    assert paris.startswith("DEMO DATA (offline") and "not a real forecast" in paris
    assert len(re.findall(r"^- day \d: .+ °C, humidity \d+%, wind \d+ km/h$", paris, re.M)) == 3
    assert get_weather("Oslo") != get_weather("Lima")


@pytest.mark.parametrize(("city", "days", "message"), [("", 1, "must not be empty"), ("Rome", 9, "between 1 and 7")])
def test_weather_refuses_bad_requests(city, days, message):
    with pytest.raises(ValueError, match=message):
        get_weather(city, days)


@pytest.mark.parametrize(
    ("value", "source", "target", "expected"),
    [(10, "km", "mi", "6.21371"), (100, "C", "F", "212"), (32, "°F", "celsius", "0"), (0, "K", "C", "-273.15"),
     (1, "GiB", "MB", "1073.74"), (60, "mph", "km/h", "96.5606"), (3, "meters", "feet", "9.84252"),
     (2, "lbs", "kg", "0.907185"), (1, "gallon", "l", "3.78541"), (90, "min", "h", "1.5")],
)
def test_units_convert_with_aliases_and_plurals(value, source, target, expected):
    assert convert_units(value, source, target) == f"{value:g} {source} = {expected} {target}"


@pytest.mark.parametrize(
    ("source", "target", "message"),
    [("km", "kg", "cannot convert length (km) to mass (kg)"), ("parsec", "m", "unknown unit 'parsec'")],
)
def test_units_refuse_unknown_or_mismatched_units(source, target, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        convert_units(1, source, target)


def test_temperatures_below_absolute_zero_are_refused():
    with pytest.raises(ValueError, match="below absolute zero"):
        convert_units(-300, "C", "K")


def test_current_time_is_the_time_now_in_that_zone():
    text = current_time("Asia/Shanghai")
    shown = datetime.strptime(text[:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=ZoneInfo("Asia/Shanghai"))
    assert abs(shown - datetime.now(UTC)) < timedelta(seconds=5)
    assert "(UTC+0800" in text and text.endswith("in Asia/Shanghai")


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", ""])
def test_unknown_time_zones_are_refused_with_an_example(zone):
    with pytest.raises(ValueError, match="IANA name like 'Europe/Paris'"):
        current_time(zone)


def test_bundled_docs_exist_and_have_titles():
    index = DocIndex.from_directory(DOCS_DIR)
    assert len(index.docs) >= 8
    assert all(doc.title and doc.paragraphs for doc in index.docs)


@pytest.mark.parametrize(
    ("query", "best"),
    [("how many gpu experts for TP8", "gpu-experts-sizing.md"),
     ("stray </mm:think> in the answer", "thinking-modes.md"),
     ("address already in use port", "memory-and-errors.md"),
     ("which CPU instruction set AMX", "kt-kernel-overview.md"),
     ("record expert routing counts dump", "expert-distribution.md"),
     ("tool_choice required undeclared tools", "tool-calling.md")],
)
def test_search_ranks_the_relevant_document_first(query, best):
    assert search_docs(query, top_k=1).startswith(f"[{best}]")


def test_search_returns_top_k_documents_with_a_passage():
    hits = DocIndex.from_directory(DOCS_DIR).search("thinking mode reasoning_content", top_k=3)
    assert len(hits) == 3 and hits[0].score >= hits[1].score >= hits[2].score
    assert hits[0].doc.name == "thinking-modes.md" and "reasoning_content" in hits[0].snippet


def test_search_says_so_when_nothing_matches_and_refuses_bad_top_k():
    assert search_docs("xyzzy plugh") == "No document matches 'xyzzy plugh'."
    with pytest.raises(ValueError, match="between 1 and 8"):
        search_docs("kt", top_k=50)


def test_every_builtin_schema_is_one_the_engine_accepts():
    # sglang-kt refuses the whole chat when any offered tool's parameters break JSON Schema Draft 2020-12.
    assert {tool.name: parameters_problem(tool.parameters) for tool in builtin_tools()} == {
        tool.name: None for tool in builtin_tools()}
