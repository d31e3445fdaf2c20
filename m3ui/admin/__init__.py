"""The admin panel's logic without Gradio: form values ↔ settings, the live review of a form, host facts,
model summaries, presets and profiles, the last good launch, log views and the admin actions."""
