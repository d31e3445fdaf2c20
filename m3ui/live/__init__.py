"""Live answers sent to the page outside Gradio's queue (see docs/ARCHITECTURE.md, "Live answers").

A Gradio frame costs the app about 2 ms of CPU whatever it carries (a thread hop, the event machinery, a diff of
the outputs, the queue's message); the same frame on a page's own live channel costs a diff of the live messages
and one write. The answer's Gradio event still starts and ends the answer (its first and last frames set the
whole view); between them its frames go to the page's channel while one is attached.
"""
