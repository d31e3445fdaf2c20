"""The requests sglang-kt 0.7.2 refuses before generating, refused by the sim the same way over real HTTP.

Expected texts are the wheel's (sglang/srt/...): serving_chat.OpenAIServingChat._validate_request (a 400
`BadRequestError`), a ValueError in _convert_to_internal_request (serving_base.handle_request: a 400
`BadRequest`), tokenizer_manager.generate_request (a 400 `BadRequestError`, or for a stream the error event
of serving_chat._generate_chat_stream then `[DONE]`), and pydantic's validation of protocol.py's models
(http_server.validation_exception_handler: a 400 `Bad Request`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator, SchemaError

from tests.sglang_wheel import SglangParsers, sglang_parsers  # noqa: F401  (fixture)
from tests.sim_process import SimProcess, free_port, running_sim, sim_settings
from tests.sim_sse import WEATHER, chat, stream_chat

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with running_sim(sim_settings(free_port())) as process:
        yield process


def _refused(sim: SimProcess, body: dict[str, Any], message: str, err_type: str = "BadRequestError") -> None:
    response = chat(sim.url, body)
    assert response.status_code == 400, response.text
    assert response.json() == {"object": "error", "message": message, "type": err_type, "param": None, "code": 400}


def _refused_in_stream(sim: SimProcess, body: dict[str, Any], message: str) -> None:
    """tokenizer_manager refusals: a plain 400, but a stream has started (200): one error event, then [DONE]."""
    _refused(sim, body, message)
    streamed = stream_chat(sim.url, body)
    assert streamed.error == {"object": "error", "message": message, "type": "BadRequestError", "param": None,
                              "code": 400}
    assert streamed.events[-1] == "data: [DONE]\n\n" and len(streamed.events) == 2


def _tool(name: str, parameters: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def _schema_error(parameters: Any) -> str:
    """str(SchemaError) as serving_chat._validate_request gets it (jsonschema, pinned as sglang-kt resolves it)."""
    with pytest.raises(SchemaError) as raised:
        Draft202012Validator.check_schema(parameters)
    return str(raised.value)


BAD_SCHEMAS = {
    "unknown type": {"type": "object", "properties": {"n": {"type": "int"}}},
    "required as a flag": {"type": "object", "properties": {"city": {"type": "string", "required": True}}},
    "not an object": ["city"],
}


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
@pytest.mark.parametrize("case", list(BAD_SCHEMAS))
def test_a_tool_whose_parameters_are_no_json_schema_fails_the_request_whatever_the_tool_choice(
        sim: SimProcess, case: str, choice: str) -> None:
    # serving_chat._validate_request: Draft202012Validator.check_schema on every declared tool.
    body = {"messages": HI, "tools": [WEATHER, _tool("broken", BAD_SCHEMAS[case])], "tool_choice": choice}
    _refused(sim, body, f"Tool 1 function has invalid 'parameters' schema: {_schema_error(BAD_SCHEMAS[case])}")


@pytest.mark.parametrize("case", [*BAD_SCHEMAS, "valid"])
def test_m3uis_custom_tool_check_refuses_exactly_what_the_engine_refuses(sim: SimProcess, case: str) -> None:
    from m3ui.tools.validate import parameters_problem

    parameters = BAD_SCHEMAS.get(case, {"type": "object", "properties": {"n": {"type": "integer"}}})
    engine = chat(sim.url, {"messages": HI, "tools": [_tool("t", parameters)]})
    assert (parameters_problem(parameters) is None) == (engine.status_code == 200)
    if engine.status_code != 200:
        assert parameters_problem(parameters).split(" (at ")[0] in engine.json()["message"]


def test_conflicting_defs_fail_tool_choice_required_only(sim: SimProcess) -> None:
    # function_call/utils._get_tool_schema_defs (via get_json_schema_constraint): a ValueError → 400 BadRequest.
    def with_defs(name: str, unit: dict[str, Any]) -> dict[str, Any]:
        return _tool(name, {"type": "object", "$defs": {"Unit": unit},
                            "properties": {"unit": {"$ref": "#/$defs/Unit"}}})

    tools = [with_defs("a", {"type": "string"}), with_defs("b", {"type": "integer"})]
    _refused(sim, {"messages": HI, "tools": tools, "tool_choice": "required"},
             "Tool definition 'Unit' has multiple schemas, which is not supported.", "BadRequest")
    assert chat(sim.url, {"messages": HI, "tools": tools, "tool_choice": "auto"}).status_code == 200
    same = [with_defs("a", {"type": "string"}), with_defs("b", {"type": "string"})]
    assert chat(sim.url, {"messages": HI, "tools": same, "tool_choice": "required"}).status_code == 200


@pytest.mark.parametrize("effort", ["minimal", "none", "xhigh", "max"])
def test_reasoning_effort_outside_low_medium_high_is_refused(sim: SimProcess, effort: str) -> None:
    # serving_chat._validate_request (chat_encoding_spec is not "dsv4" for M3).
    _refused(sim, {"messages": HI, "reasoning_effort": effort},
             f"Unsupported reasoning_effort={effort!r} for this model. Expected one of: low, medium, high.")


def test_reasoning_effort_given_as_reasoning_effort_is_checked_too(sim: SimProcess) -> None:
    # protocol.ChatCompletionRequest.normalize_reasoning_inputs copies reasoning.effort into reasoning_effort.
    _refused(sim, {"messages": HI, "reasoning": {"effort": "minimal"}},
             "Unsupported reasoning_effort='minimal' for this model. Expected one of: low, medium, high.")
    assert chat(sim.url, {"messages": HI, "reasoning": {"effort": "high"}}).status_code == 200


@pytest.mark.parametrize("effort", ["low", "medium", "high"])
def test_reasoning_effort_low_medium_and_high_are_accepted(sim: SimProcess, effort: str) -> None:
    assert chat(sim.url, {"messages": HI, "reasoning_effort": effort}).status_code == 200


def test_json_schema_response_format_without_a_schema_is_refused(sim: SimProcess) -> None:
    # serving_chat._validate_request: getattr(response_format.json_schema, "schema_", None) is None.
    message = "schema_ is required for json_schema response format request."
    _refused(sim, {"messages": HI, "response_format": {"type": "json_schema", "json_schema": {"name": "answer"}}},
             message)
    _refused(sim, {"messages": HI, "response_format": {"type": "json_schema"}}, message)


def _schema_refusal(sim: SimProcess, body: dict[str, Any]) -> str:
    response = chat(sim.url, body)
    assert response.status_code == 400 and response.json()["type"] == "Bad Request", response.text
    return response.json()["message"]


def test_an_unknown_response_format_type_is_a_validation_error(sim: SimProcess) -> None:
    # protocol.ResponseFormat.type: Literal["text", "json_object", "json_schema"] (or a structural tag).
    message = _schema_refusal(sim, {"messages": HI, "response_format": {"type": "xml"}})
    assert "response_format.ResponseFormat.type" in message
    assert "Input should be 'text', 'json_object' or 'json_schema'" in message


@pytest.mark.parametrize(("message", "where"), [
    ({"role": "user"}, "messages.0.ChatCompletionMessageUserParam.content"),
    ({"role": "user", "content": None}, "messages.0.ChatCompletionMessageUserParam.content"),
    ({"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
     "messages.0.ChatCompletionMessageUserParam.content.list[union["),
])
def test_user_turns_without_content_or_with_unknown_parts_are_validation_errors(
        sim: SimProcess, message: dict[str, Any], where: str) -> None:
    # protocol.ChatCompletionMessageUserParam: content is required, its parts are text/image/video/audio.
    assert where in _schema_refusal(sim, {"messages": [message]})


@pytest.mark.wheel
@pytest.mark.parametrize("message", [
    {"role": "user"}, {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
])
def test_message_validation_errors_name_what_the_wheels_own_models_name(
        sim: SimProcess, sglang_parsers: SglangParsers, message: dict[str, Any]) -> None:  # noqa: F811
    from pydantic import ValidationError
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest

    with pytest.raises(ValidationError) as raised:
        ChatCompletionRequest.model_validate({"messages": [message]})
    sim_message = _schema_refusal(sim, {"messages": [message]})
    for error in raised.value.errors():
        assert ".".join(str(part) for part in error["loc"]) in sim_message and error["msg"] in sim_message


@pytest.mark.parametrize("body", [{"model": "MiniMax-M3:latest"}, {"lora_path": "my-adapter"}])
def test_a_lora_adapter_without_enable_lora_is_refused(sim: SimProcess, body: dict[str, Any]) -> None:
    # serving_base._resolve_lora_path ("base:adapter"), tokenizer_manager._validate_and_resolve_lora.
    adapter = "latest" if "model" in body else "my-adapter"
    _refused_in_stream(sim, {"messages": HI, **body},
                       f"LoRA adapter '{adapter}' was requested, but LoRA is not enabled. Please launch the server "
                       "with --enable-lora flag and preload adapters using --lora-paths or /load_lora_adapter "
                       "endpoint.")


@pytest.mark.parametrize(("body", "message"), [
    ({"return_hidden_states": True}, "The server is not configured to return the hidden states. Please set "
                                     "`--enable-return-hidden-states` to enable this feature."),
    ({"custom_logit_processor": "{}"}, "The server is not configured to enable custom logit processor. Please "
                                       "set `--enable-custom-logit-processor` to enable this feature."),
])
def test_features_that_need_a_server_flag_are_refused_without_it(
        sim: SimProcess, body: dict[str, Any], message: str) -> None:
    # tokenizer_manager._validate_one_request.
    _refused_in_stream(sim, {"messages": HI, **body}, message)


def test_two_grammars_at_once_are_refused(sim: SimProcess) -> None:
    # sampling_params.SamplingParams.verify: json_object becomes a json_schema grammar (to_sampling_params).
    _refused_in_stream(sim, {"messages": HI, "regex": "yes|no", "response_format": {"type": "json_object"}},
                       "Only one of regex, json_schema, or ebnf can be set.")
