"""Files attached to a chat message: read as bounded streams, turned into text, counted in tokens, and fitted
into the model's context. No Gradio here; the chat view (m3ui/ui/chat/attachments.py) shows the results."""
