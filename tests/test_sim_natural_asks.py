"""The scripted model reads natural requests as a tool-calling model would: spoken arithmetic becomes a calculator
call, a stated time asked for in another city is converted (not two current times), weather asked to be compared
is compared, a result that ends its own sentence gets no second period, and a Markdown table is data, not a sum."""

from __future__ import annotations

from datetime import date

from launch.sim.answers import Conversation, Turn, plan_reply
from launch.sim.arithmetic import find_comparison, find_expressions, solve
from launch.sim.m3_text import PlannedCall
from launch.sim.time_zones import find_time_conversion
from launch.sim.tool_intent import plan_calls
from m3ui.tools.weather import get_weather
from tests.test_sim_answers import TOOLS

TABLE = ("Summarize this table:\n\n| Screen | Size | Range |\n|:--|--:|---|\n| A | 1920x1080 | 10-12 |\n"
         "| B | 3 + 4 | 5 |")


def answered(question: str, *results: tuple[PlannedCall, str]) -> str:
    """The reply's content once each planned call got its result."""
    calls = tuple(call for call, _ in results)
    ids = tuple(f"call_{i}" for i in range(len(calls)))
    turns = (Turn("user", question), Turn("assistant", "", calls, ids),
             *(Turn("tool", text, tool_call_id=ids[i]) for i, (_, text) in enumerate(results)))
    return plan_reply(Conversation(turns, TOOLS, "auto")).content


def test_spoken_arithmetic_makes_a_calculator_call_with_the_right_value():
    calls = plan_calls("15% of 240, plus 12", TOOLS)
    assert [call.name for call in calls] == ["calculator"]
    assert solve(str(calls[0].arguments["expression"])).value == 48
    assert [solve(e).value for e in find_expressions("What is 3 times 4 minus 2, and 100 divided by 8?")] == [10, 12.5]
    assert find_expressions("Paris plus Oslo") == []


def test_a_time_stated_in_one_city_is_converted_to_another_without_a_clock_call():
    question = "9am in New York, what time in Tokyo?"
    assert plan_calls(question, TOOLS) == ()  # current_time tells the time now, not 9am's
    conversion = find_time_conversion(question)
    assert conversion is not None
    reasoning, answer = conversion.answer(date(2026, 12, 2))  # EST (UTC-5) to JST (UTC+9)
    assert answer == "9:00 AM in New York (EST) is **11:00 PM** in Tokyo (JST)." and "14 hours ahead" in reasoning
    assert "1:30 AM the next day" in find_time_conversion("3:30 pm in Paris is what time in Sydney?").answer(
        date(2026, 12, 2))[1]
    reply = plan_reply(Conversation((Turn("user", question),), TOOLS, "auto"))
    assert reply.calls == () and "in Tokyo" in reply.content and "in New York" in reply.content
    assert find_time_conversion("What time is it in Tokyo?") is None  # the time now: a clock tool's ask


def test_weather_asked_to_be_compared_is_compared():
    question = "Compare the weather in Tokyo and Oslo"
    calls = plan_calls(question, TOOLS)
    assert [(c.name, c.arguments["city"]) for c in calls] == [("get_weather", "Tokyo"), ("get_weather", "Oslo")]
    content = answered(question, *((call, get_weather(str(call.arguments["city"]))) for call in calls))
    assert "Compared: Tokyo" in content and "warmer than" in content or "as warm as each other" in content
    plain = answered("What's the weather in Tokyo and Oslo?", *((c, get_weather(str(c.arguments["city"])))
                                                              for c in calls))
    assert "Compared" not in plain  # only when asked


def test_a_result_ending_its_own_sentence_gets_one_period():
    call = PlannedCall("lookup_order", {"order_id": "A-1042"})
    content = answered("Where is order A-1042?", (call, "Order A-1042: shipped on Monday (demo data)."))
    assert content.endswith("(demo data).") and ".." not in content


def test_a_markdown_table_is_data_not_arithmetic():
    assert find_expressions(TABLE) == [] and find_comparison(TABLE) is None
    reply = plan_reply(Conversation((Turn("user", TABLE),), (), "auto"))
    assert "2073600" not in reply.content and reply.content.startswith("I'm m3ui's simulated engine")
