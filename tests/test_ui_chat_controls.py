"""The settings form of both chat tabs: values become GenerationSettings, bad ones a gr.Error before sending."""

from __future__ import annotations

import gradio as gr
import pytest

from m3ui.ui.chat_controls import settings_from_form


def test_the_stall_limit_comes_from_the_form_or_defaults():
    assert settings_from_form("enabled").stall_seconds == 60.0
    assert settings_from_form("enabled", stall_seconds=15).stall_seconds == 15.0


def test_a_stall_limit_out_of_range_is_refused_with_its_bounds():
    with pytest.raises(gr.Error, match=r"stall_seconds must be in \[1, 3600\]"):
        settings_from_form("enabled", stall_seconds=0)
