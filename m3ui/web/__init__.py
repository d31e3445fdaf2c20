"""HTTP guards around both Gradio apps, at the ASGI layer (no Gradio imports).

Gradio serves every event handler to any client that reaches it, so what a browser page on another site may
make the app do is decided here, before a request reaches either app: the Host allow-list (DNS rebinding),
the Origin check (cross-site requests), the admin token, the login throttle and audit, sessions ended when their
account or password changes, API input checks, and cookies marked Secure over https.
"""
