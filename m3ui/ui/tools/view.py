"""The Tools tab assembled: its components (layout), its handlers (controller) and where its tool chat is kept
(keeping: on the server per person with accounts, else in the browser), wired to the page's events."""

from __future__ import annotations

import gradio as gr

from m3ui.accounts.server_chats import ServerChats
from m3ui.services import AppServices
from m3ui.ui.chat.controls import STREAMING_LISTENER, chat_runner, download_of
from m3ui.ui.chat.view import DOWNLOAD_JS
from m3ui.ui.tools.controller import ToolsController
from m3ui.ui.tools.keeping import BrowserKeeper, ServerKeeper, ToolChatKeeper, new_tool_chat
from m3ui.ui.tools.layout import ToolsTabUI, build_layout

# The page script keeps the tool chat in the browser's storage (assets/js/tools.js).
READ_SAVED_JS = "(saved) => [window.m3uiTools.read()]"
WRITE_SAVED_JS = "(saved) => { window.m3uiTools.write(saved); }"


def build_tools_tab(services: AppServices, page: gr.Blocks) -> ToolsTabUI:
    ui = build_layout(new_tool_chat())
    _wire(ui, ToolsController(chat_runner(services), ui, tool_chat_keeper(services)), page)
    return ui


def tool_chat_keeper(services: AppServices) -> ToolChatKeeper:
    """As the Chat tab decides (m3ui.ui.chat.view.build_chat_tab): on the server with a login and accounts."""
    accounts = services.policy.accounts if services.policy.chat_login else None
    return ServerKeeper(ServerChats(accounts)) if accounts is not None else BrowserKeeper()


def _wire(ui: ToolsTabUI, tools: ToolsController, page: gr.Blocks) -> None:
    gr.on([ui.message.submit, ui.send.click], tools.send, [ui.message, ui.chat, *ui.settings], ui.view,
          **STREAMING_LISTENER)
    ui.regenerate.click(tools.regenerate, [ui.chat, *ui.settings], ui.view, **STREAMING_LISTENER)
    ui.stop.click(tools.stop, None, None, queue=False)
    ui.approve.click(tools.approve, None, ui.approval, queue=False)
    ui.deny.click(tools.deny, None, ui.approval, queue=False)
    # Queued (unlike the other quick handlers): a refused clear says why in a toast, which only queued events show.
    gr.on([ui.clear.click, ui.chatbot.clear], tools.clear, ui.chat, ui.view, show_progress="hidden")
    ui.tool_picker.change(tools.tools_changed, [ui.custom_specs, ui.tool_picker, ui.tool_choice], ui.tools,
                          queue=False)
    ui.add_tool.click(tools.add_tool, [ui.custom_specs, ui.tool_picker, ui.tool_choice, ui.custom_json], ui.editor,
                      queue=False)
    ui.remove_tool.input(tools.remove_tool, [ui.custom_specs, ui.tool_picker, ui.tool_choice, ui.remove_tool],
                         ui.editor, queue=False)
    for button, kind in ((ui.export_md, "md"), (ui.export_json, "json")):
        button.click(lambda chat, kind=kind: download_of(chat, kind), [ui.chat], ui.download, show_progress="hidden"
                     ).success(None, [ui.download], None, js=DOWNLOAD_JS)
    # the kept tool chat comes back when the page (re)loads: from the browser's storage, or from the server
    if tools.keeper.in_browser:
        ui.saved.change(None, [ui.saved], None, js=WRITE_SAVED_JS)
    page.load(tools.load, [ui.saved], [ui.chat, ui.chatbot], js=READ_SAVED_JS if tools.keeper.in_browser else None,
              queue=False, show_progress="hidden")
