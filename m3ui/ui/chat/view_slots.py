"""The components every full update of the Chat tab sets, in order (ChatController.show fills them by name)."""

SLOTS = ("library", "outbox", "chatbot", "chat_picker", "title", "system_prompt", "message", "send", "stop",
         "regenerate", "clear", "new_chat", "rename", "delete", "export_md", "export_json", "undo", "message_actions",
         # the settings a chat keeps (m3ui.conversation.library.CHAT_SETTINGS)
         "thinking_mode", "temperature", "top_p", "max_tokens", "stall_seconds", "keep_reasoning")
VIEW_SIZE = len(SLOTS)
