"""The Tools tab's components: the chat with its composer and approval bar on the left, the tool settings and the
custom-tool editor on the right. The handlers address them by name (ToolsTabUI), never by position."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from m3ui.chat_session import EXAMPLE_CUSTOM_TOOL, tool_choice_options
from m3ui.client import MAX_STALL_SECONDS, MIN_STALL_SECONDS, GenerationSettings
from m3ui.conversation import LoopOptions
from m3ui.conversation.library import SavedChat
from m3ui.tools import builtin_tools
from m3ui.ui.chat.controls import CHAT_BOX_HEIGHT, thinking_mode_radio
from m3ui.ui.tools.schemas import schemas_json

DEFAULT_OPTIONS = LoopOptions()
DEFAULT_SETTINGS = GenerationSettings()
EXAMPLES = [
    "What's the weather in Paris?",
    "Compare the weather in Tokyo and Oslo for 3 days.",
    "Use the calculator: (17 * 23 + 4) / 3",
    "Search the docs for thinking modes.",
    "What's the weather in Lisbon, and what is 2**10?",
]
MESSAGE_HINT = "Ask something a tool can answer…  (Enter sends)"
PLACEHOLDER = ("**Tool calling demo**\n\nAsk something a tool can answer (weather, arithmetic, unit conversion, "
               "time, docs search). Each call shows its arguments, status and result; the results go back to "
               "the model, which then answers.")


@dataclass
class ToolsTabUI:
    chat: gr.State
    custom_specs: gr.State
    chatbot: gr.Chatbot
    message: gr.Textbox
    send: gr.Button
    stop: gr.Button
    regenerate: gr.Button
    clear: gr.Button
    approval: gr.Group
    approval_text: gr.Markdown
    approve: gr.Button
    deny: gr.Button
    saved: gr.JSON
    export_md: gr.Button
    export_json: gr.Button
    download: gr.JSON
    tool_picker: gr.CheckboxGroup
    tool_choice: gr.Dropdown
    thinking_mode: gr.Radio
    require_approval: gr.Checkbox
    max_steps: gr.Slider
    tool_timeout: gr.Slider
    stall_seconds: gr.Number
    schemas: gr.Code
    custom_json: gr.Code
    add_tool: gr.Button
    remove_tool: gr.Dropdown
    custom_status: gr.Markdown

    @property
    def view(self) -> list[gr.blocks.Block]:
        """What a send, a regenerate or a clear may set (ToolsController.show keys its values by these)."""
        return [self.chat, self.chatbot, self.message, self.send, self.stop, self.regenerate, self.clear,
                self.approval, self.approval_text, self.saved]

    @property
    def settings(self) -> list[gr.components.Component]:
        """What a send or a regenerate reads besides the chat, in the order of ToolsController.send's parameters."""
        return [self.custom_specs, self.tool_picker, self.tool_choice, self.thinking_mode, self.require_approval,
                self.max_steps, self.tool_timeout, self.stall_seconds]

    @property
    def tools(self) -> list[gr.components.Component]:
        """What the tool choice and the schema view derive from: see ToolsController.tools_changed."""
        return [self.tool_picker, self.tool_choice, self.schemas, self.remove_tool]

    @property
    def editor(self) -> list[gr.components.Component]:
        """What adding or removing a custom tool may set."""
        return [self.custom_specs, *self.tools, self.custom_status]


def build_layout(first_chat: SavedChat) -> ToolsTabUI:
    """The components, inside the caller's Blocks; `first_chat`: the chat a page starts with."""
    names = [tool.name for tool in builtin_tools()]
    chat = gr.State(first_chat)
    custom_specs = gr.State(())
    with gr.Row(equal_height=False, elem_classes=["m3-tools"]):
        with gr.Column(scale=3, min_width=420):
            chatbot = gr.Chatbot(height=CHAT_BOX_HEIGHT, show_label=False, elem_id="m3-tools-chatbot",
                                 placeholder=PLACEHOLDER, feedback_options=None, buttons=["copy_all"],
                                 group_consecutive_messages=False)
            # One short bar right under the chat (the call's arguments are in the chat, shown once).
            with (gr.Group(visible=False, elem_id="m3-approval", elem_classes=["m3-approval"]) as approval,
                  gr.Row(equal_height=True)):
                approval_text = gr.Markdown(elem_classes=["m3-approval-text"])
                approve = gr.Button("✓ Approve", variant="primary", size="sm", min_width=100, scale=0,
                                    elem_id="m3-approve")
                deny = gr.Button("✗ Deny", variant="stop", size="sm", min_width=100, scale=0, elem_id="m3-deny")
            with gr.Row(equal_height=True, elem_classes=["m3-composer"]):
                message = gr.Textbox(placeholder=MESSAGE_HINT, show_label=False, lines=1, max_lines=8, scale=8,
                                     elem_id="m3-tools-message")
                send = gr.Button("Send", variant="primary", scale=1, min_width=80, elem_id="m3-tools-send")
                stop = gr.Button("■ Stop", variant="stop", scale=1, min_width=80, visible=False,
                                 elem_id="m3-tools-stop")
            with gr.Row(elem_classes=["m3-tools-actions"]):
                regenerate = gr.Button("↻ Regenerate", size="sm", elem_id="m3-tools-regenerate")
                clear = gr.Button("Clear", size="sm", elem_id="m3-tools-clear")
                export_md = gr.Button("⬇ Markdown", size="sm", elem_id="m3-tools-export-md")
                export_json = gr.Button("⬇ JSON", size="sm", elem_id="m3-tools-export-json")
            saved = gr.JSON(None, visible=False)  # the chat as the browser keeps it (tools.js writes it)
            download = gr.JSON(None, visible=False)  # an export for chat.js to hand to the browser
            gr.Examples(EXAMPLES, [message], label="Try")
        with gr.Column(scale=2, min_width=280, elem_classes=["m3-settings"]):
            tool_picker = gr.CheckboxGroup(names, value=names, label="Tools offered to the model",
                                           elem_id="m3-tool-picker")
            tool_choice = gr.Dropdown(tool_choice_options(names), value="auto", label="tool_choice",
                                      info="auto: the model decides · none: no calls · required / force: must call "
                                           "(first request only)", elem_id="m3-tool-choice")
            thinking_mode = thinking_mode_radio()
            require_approval = gr.Checkbox(False, label="Approve each call before it runs",
                                           elem_id="m3-require-approval")
            # Each with a one-line note, so that their number boxes sit level side by side (stacked on a phone)
            with gr.Row(elem_classes=["m3-tool-limits"]):
                max_steps = gr.Slider(1, 10, value=DEFAULT_OPTIONS.max_steps, step=1, label="Step limit",
                                      info="requests to the model per question", elem_id="m3-tools-max-steps")
                tool_timeout = gr.Slider(1, 60, value=DEFAULT_OPTIONS.tool_timeout_s, step=1,
                                         label="Tool timeout (s)", info="how long one call may run",
                                         elem_id="m3-tools-timeout")
            # No minimum/maximum here: Gradio would refuse a bad value with an error over the chat; the handler
            # says what to fix instead and leaves the page as it was.
            stall_seconds = gr.Number(DEFAULT_SETTINGS.stall_seconds, label="Stall limit (s)",
                                      info=f"an answer is given up after this long with nothing from the engine "
                                           f"({MIN_STALL_SECONDS:g}–{MAX_STALL_SECONDS:g}; raise it for long "
                                           f"prompts: they are silent until the first token)",
                                      elem_id="m3-tools-stall")
            with gr.Accordion("Tool schemas sent to the model", open=False):
                schemas = gr.Code(schemas_json(names, ()), language="json", interactive=False, show_label=False)
            with gr.Accordion("Custom tool (JSON schema + result template)", open=False):
                custom_json = gr.Code(EXAMPLE_CUSTOM_TOOL, language="json", interactive=True, show_label=False,
                                      elem_id="m3-custom-json")
                with gr.Row():
                    add_tool = gr.Button("Add / replace tool", size="sm", elem_id="m3-add-tool")
                    remove_tool = gr.Dropdown([], label="Remove a custom tool", scale=1, min_width=120)
                custom_status = gr.Markdown("`$name` in the template is replaced by the argument's value.")
    return ToolsTabUI(chat, custom_specs, chatbot, message, send, stop, regenerate, clear, approval, approval_text,
                      approve, deny, saved, export_md, export_json, download, tool_picker, tool_choice, thinking_mode,
                      require_approval, max_steps, tool_timeout, stall_seconds, schemas, custom_json, add_tool,
                      remove_tool, custom_status)
