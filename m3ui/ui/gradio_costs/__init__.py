"""Gradio's own runtime costs, cut where the app measured them (each module says what it cost and why the cut is
safe): failed optional imports on every event, idle queue polling, each new session's configuration,
and the page's snapshots of components for progress it never shows."""
