"""The admin cockpit's Gradio views; the logic behind them is in m3ui/admin/ (no Gradio)."""
