"""Every place m3ui's Python reaches past Gradio's public API, in one folder; docs/GRADIO.md lists each of them
(and the JavaScript and HTTP ones, which stay with their pages and guards) with the Gradio version they were
checked against, what they touch, why, and the test that fails when Gradio changes them.

- absent_modules, lazy_session_config, progress_targets, queue_pacing: Gradio's own runtime costs, cut where the
  app measured them (each module says what it cost and why the cut is safe);
- logins: the login table and cookies of a mounted Gradio app (session revocation);
- event_context: the request of the event being handled, for code a handler calls without passing it."""
