"""The sign-in page of both apps (m3ui.web.login_route serves it): a plain HTML form, light or dark as the rest of
the app (the theme script is put into its <head>), the user name kept after a failed try."""

from __future__ import annotations

import html
from pathlib import Path

# The app's font faces (one source: Gradio's pages load the same file, m3ui/ui/app_view.py)
FONTS_CSS = Path(__file__).resolve().parents[2] / "assets" / "fonts.css"
WRONG = "Wrong user name or password."

# WCAG AA (4.5:1) for every text in both themes: white on the button's blue is 5.2:1 (on the dark theme's lighter
# #3b82f6 it was 3.7:1), and a link on the dark card is a light blue, not the button's.
STYLE = FONTS_CSS.read_text(encoding="utf-8") + """
:root { color-scheme: light; --bg: #f4f5f7; --card: #fff; --col: #111827; --muted: #4b5563; --line: #d1d5db;
  --accent: #2563eb; --accent-col: #fff; --link: #1d4ed8; --bad: #b91c1c; --bad-bg: #fef2f2;
  --bg-dark: #0b0f19; --col-dark: #e5e7eb; }  /* the dark pair is what the theme script paints first */
:root.dark { color-scheme: dark; --bg: var(--bg-dark); --card: #161b26; --col: var(--col-dark); --muted: #9ca3af;
  --line: #374151; --link: #93c5fd; --bad: #f87171; --bad-bg: #2a1215; }
* { box-sizing: border-box; }
body { margin: 0; min-height: 100vh; display: flex; align-items: center; justify-content: center; padding: 1rem;
  font: 16px/1.5 'm3ui Source Sans', 'Source Sans Pro', ui-sans-serif, system-ui, sans-serif;
  background: var(--bg); color: var(--col); }
main { width: 100%; max-width: 24rem; background: var(--card); border: 1px solid var(--line); border-radius: 12px;
  padding: 1.5rem; box-shadow: 0 10px 30px rgba(0, 0, 0, .08); }
.m3-login-head { display: flex; align-items: center; gap: .75rem; margin-bottom: .5rem; }
.m3-login-name { font-weight: 700; font-size: 1.3rem; margin-right: auto; }
.m3-theme-toggle { display: inline-flex; gap: .3rem; cursor: pointer; padding: .2rem .7rem; border-radius: 999px;
  font: inherit; font-size: .85rem; border: 1px solid var(--muted); background: transparent; color: inherit; }
:root.dark .m3-when-light, :root:not(.dark) .m3-when-dark { display: none; }
h1 { font-size: 1.15rem; margin: .75rem 0 .25rem; }
.m3-login-message { color: var(--muted); margin: 0 0 .75rem; font-size: .95rem; }
.m3-login-failed { color: var(--bad); background: var(--bad-bg); font-weight: 700; margin: .5rem 0;
  padding: .5rem .75rem; border-radius: 8px; }
label { display: block; margin: .8rem 0 .25rem; font-weight: 600; font-size: .95rem; }
input { width: 100%; padding: .6rem .7rem; font: inherit; color: inherit; background: var(--bg);
  border: 1px solid var(--line); border-radius: 8px; }
input:focus { outline: 2px solid var(--accent); outline-offset: 1px; }
button[type=submit] { width: 100%; margin-top: 1.2rem; padding: .65rem; font: inherit; font-weight: 600;
  cursor: pointer; border: 0; border-radius: 8px; background: var(--accent); color: var(--accent-col); }
.m3-login-more { margin: 1rem 0 0; font-size: .9rem; color: var(--muted); }
a { color: var(--link); }
"""

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8">{head}<title>Sign in — m3ui</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{style}</style></head><body><main>
<div class="m3-login-head"><span class="m3-login-name">m3ui · MiniMax-M3</span>
<button type="button" class="m3-theme-toggle" title="Light or dark pages (remembered in this browser)">
<span class="m3-when-light">☾ Dark</span><span class="m3-when-dark">☀ Light</span></button></div><h1>Sign in</h1>
<p class="m3-login-message">{message}</p>{failed}
<form method="post" action="{action}"><label for="m3-login-user">User name</label>
<input id="m3-login-user" name="username" type="text" autocomplete="username" required maxlength="100"
value="{name}"{name_focus}><label for="m3-login-password">Password</label><input id="m3-login-password"
name="password" type="password" autocomplete="current-password" required maxlength="1024"{password_focus}>
<button type="submit">Sign in</button></form>{more}</main></body></html>"""


def login_page(action: str, message: str, head: str, name: str = "", failed: str = "", signup: str = "") -> str:
    """`failed`: why the last try was refused (shown as an alert); `signup`: the sign-up page's URL, if any."""
    alert = f'<p class="m3-login-failed" role="alert">{html.escape(failed)}</p>' if failed else ""
    more = (f'<p class="m3-login-more">No account? <a href="{html.escape(signup)}">Create one</a> when the admin '
            "allows sign-up, or ask the admin.</p>") if signup else ""
    return PAGE.format(head=head, style=STYLE, message=html.escape(message), failed=alert, action=html.escape(action),
                       name=html.escape(name), name_focus="" if name else " autofocus",
                       password_focus=" autofocus" if name else "", more=more)
