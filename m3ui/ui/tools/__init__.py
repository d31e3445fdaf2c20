"""The Tools tab: the tool-calling demo (view, layout, controller) and where its tool chat is kept (keeping)."""
