"""Gradio's own runtime costs, cut where the app measured them (each module says what it cost and why the cut is
safe): failed optional imports on every event, idle queue polling, and each new session's configuration."""
