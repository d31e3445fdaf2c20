"""Why sglang-kt 0.7.2 refuses a chat request before generating, in the order it checks, with its words.

Three stages, each its own answer on the wire (chat_route.py):
- `validation_problem`: serving_chat.OpenAIServingChat._validate_request, a 400 `BadRequestError`;
- `conversion_problem`: a ValueError from _convert_to_internal_request (serving_base.handle_request turns it
  into a 400 `BadRequest`);
- `engine_problem`: a ValueError from tokenizer_manager.generate_request (LoRA, then _validate_one_request,
  then SamplingParams.verify): a 400 `BadRequestError`, or for a stream a `data: {"error": ...}` event.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator, SchemaError

from launch.sim.plan import ServingPlan
from launch.sim.request import ChatRequest

REASONING_EFFORTS = (None, "low", "medium", "high")  # any model but DeepSeek-V4 (serving_chat._validate_request)


def validation_problem(request: ChatRequest, context_length_flag: int | None) -> str | None:
    """serving_chat._validate_request. max_tokens is held against `--context-length` only when that flag was
    given; otherwise an oversized request passes here and fails in the tokenizer manager."""
    if not request.messages:
        return "Messages cannot be empty."
    if request.reasoning_effort not in REASONING_EFFORTS:
        return (f"Unsupported reasoning_effort={request.reasoning_effort!r} for this model. "
                "Expected one of: low, medium, high.")
    tools = request.tools or []
    if request.choice_mode == "required" and not tools:
        return "Tools cannot be empty if tool choice is set to required."
    if request.choice_mode == "named":
        if not tools:
            return "Tools cannot be empty if tool choice is set to a specific tool."
        if not any(t.function.name == request.named_tool for t in tools):
            return f"Tool '{request.named_tool}' not found in tools list."
    for index, tool in enumerate(tools):  # every declared tool, whatever the tool_choice
        problem = schema_problem(tool.function.parameters)
        if problem is not None:
            return f"Tool {index} function has invalid 'parameters' schema: {problem}"
    limit = request.max_new_tokens
    if limit and context_length_flag and limit > context_length_flag:
        return (f"max_completion_tokens is too large: {limit}."
                f"This model supports at most {context_length_flag} completion tokens.")
    response_format = request.response_format
    if response_format is not None and response_format.type == "json_schema" and (
            response_format.json_schema is None or response_format.json_schema.schema_ is None):
        return "schema_ is required for json_schema response format request."
    return None


def schema_problem(parameters: Any) -> str | None:
    """jsonschema's SchemaError text for a `parameters` value that is no JSON Schema (Draft 2020-12), or None."""
    if parameters is None:
        return None
    try:
        Draft202012Validator.check_schema(parameters)
    except SchemaError as exc:
        return str(exc)
    return None


def conversion_problem(request: ChatRequest) -> str | None:
    """function_call/utils._get_tool_schema_defs: tool_choice "required" merges every tool's `$defs` into one
    constraint, and two tools defining one name differently is refused."""
    if request.choice_mode != "required" or not request.tools:
        return None
    merged: dict[str, Any] = {}
    for tool in request.tools:
        for name, schema in ((tool.function.parameters_schema or {}).get("$defs") or {}).items():
            if name in merged and merged[name] != schema:
                return f"Tool definition '{name}' has multiple schemas, which is not supported."
            merged[name] = schema
    return None


def lora_adapter(request: ChatRequest) -> str | None:
    """serving_base._resolve_lora_path: `model: "base:adapter"` names a LoRA adapter (before lora_path)."""
    if ":" in request.model:
        adapter = request.model.split(":", 1)[1].strip()
        if adapter:
            return adapter
    if isinstance(request.lora_path, list):
        return next((a for a in request.lora_path if a), None)
    return request.lora_path or None


def engine_problem(request: ChatRequest, prompt_len: int, plan: ServingPlan) -> str | None:
    """tokenizer_manager.generate_request's refusals, in its order."""
    adapter = lora_adapter(request)
    if adapter and "enable_lora" not in plan.server_flags:
        return (f"LoRA adapter '{adapter}' was requested, but LoRA is not enabled. Please launch the server with "
                "--enable-lora flag and preload adapters using --lora-paths or /load_lora_adapter endpoint.")
    return _context_problem(prompt_len, request, plan.context_len) or _feature_problem(request, plan) or \
        sampling_problem(request)


def _context_problem(prompt_len: int, request: ChatRequest, context_len: int) -> str | None:
    """tokenizer_manager._validate_one_request: the input, then input plus max_new_tokens, against the context."""
    if prompt_len >= context_len:
        return f"The input ({prompt_len} tokens) is longer than the model's context length ({context_len} tokens)."
    limit = request.max_new_tokens
    if limit is not None and limit + prompt_len >= context_len:
        return (f"Requested token count exceeds the model's maximum context length of {context_len} tokens. "
                f"You requested a total of {limit + prompt_len} tokens: {prompt_len} tokens from the input "
                f"messages and {limit} tokens for the completion. Please reduce the number of tokens in the "
                "input messages or the completion to fit within the limit.")
    return None


def _feature_problem(request: ChatRequest, plan: ServingPlan) -> str | None:
    """tokenizer_manager._validate_one_request: features that need a server flag."""
    if request.return_hidden_states and "enable_return_hidden_states" not in plan.server_flags:
        return ("The server is not configured to return the hidden states. "
                "Please set `--enable-return-hidden-states` to enable this feature.")
    if request.custom_logit_processor and "enable_custom_logit_processor" not in plan.server_flags:
        return ("The server is not configured to enable custom logit processor. "
                "Please set `--enable-custom-logit-processor` to enable this feature.")
    return None


def sampling_problem(request: ChatRequest) -> str | None:
    """SamplingParams.verify's complaint about the request's sampling settings (unset ones take the defaults)."""
    temperature = 1.0 if request.temperature is None else request.temperature
    top_p = 1.0 if request.top_p is None else request.top_p
    top_k = -1 if request.top_k is None else request.top_k
    min_p = 0.0 if request.min_p is None else request.min_p
    repetition = 1.0 if request.repetition_penalty is None else request.repetition_penalty
    limit = request.max_new_tokens
    grammars = (request.regex, request.ebnf, _response_format_grammar(request))
    checks = (
        (temperature < 0.0, f"temperature must be non-negative, got {temperature}."),
        (not 0.0 < top_p <= 1.0, f"top_p must be in (0, 1], got {top_p}."),
        (not 0.0 <= min_p <= 1.0, f"min_p must be in [0, 1], got {min_p}."),
        (top_k < 1 and top_k != -1, f"top_k must be -1 (disable) or at least 1, got {top_k}."),
        (not -2.0 <= request.frequency_penalty <= 2.0,
         f"frequency_penalty must be in [-2, 2], got {request.frequency_penalty}."),
        (not -2.0 <= request.presence_penalty <= 2.0,
         f"presence_penalty must be in [-2, 2], got {request.presence_penalty}."),
        (not 0.0 <= repetition <= 2.0, f"repetition_penalty must be in [0, 2], got {repetition}."),
        (request.min_tokens < 0, f"min_new_tokens must be in [0, max_new_tokens], got {request.min_tokens}."),
        ((limit or 0) < 0, f"max_new_tokens must be at least 0, got {limit}."),
        (limit is not None and request.min_tokens > limit,
         f"min_new_tokens must be in [0, max_new_tokens({limit})], got {request.min_tokens}."),
        (sum(g is not None for g in grammars) > 1, "Only one of regex, json_schema, or ebnf can be set."),
    )
    return next((message for failed, message in checks if failed), None)


def _response_format_grammar(request: ChatRequest) -> str | None:
    """protocol.to_sampling_params: json_schema and json_object both become a `json_schema` grammar."""
    response_format = request.response_format
    return "json_schema" if response_format is not None and response_format.type in ("json_schema",
                                                                                       "json_object") else None
