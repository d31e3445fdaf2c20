"""The settings form of both chat tabs: values become GenerationSettings, bad ones a gr.Error before sending."""

from __future__ import annotations

import gradio as gr
import pytest

from m3ui.ui.chat.controls import settings_from_form


def test_the_stall_limit_comes_from_the_form_or_defaults():
    assert settings_from_form("enabled").stall_seconds == 60.0
    assert settings_from_form("enabled", stall_seconds=15).stall_seconds == 15.0


def test_a_stall_limit_out_of_range_is_refused_with_its_bounds():
    with pytest.raises(gr.Error, match=r"stall_seconds must be in \[1, 3600\]"):
        settings_from_form("enabled", stall_seconds=0)


@pytest.mark.parametrize("field", ["temperature", "top_p", "max_tokens", "stall_seconds"])
def test_a_value_that_is_no_number_is_refused_by_name_not_with_a_crash(field):
    # the answer listeners take the page's (or an API client's) values unprocessed
    values = {"temperature": 0.6, "top_p": 0.95, "max_tokens": 100, "stall_seconds": 60, field: "lots"}
    with pytest.raises(gr.Error, match="Fix the settings before sending"):
        settings_from_form("enabled", values["temperature"], values["top_p"], values["max_tokens"],
                           stall_seconds=values["stall_seconds"])
