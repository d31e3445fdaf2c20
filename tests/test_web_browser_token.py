"""The passwordless admin in real Chromium (issue 9 #1): the URL printed at startup opens the cockpit (the
token is traded for a cookie that every later request of the page carries, the live status included), the
token leaves the address bar, and the bare /admin/ URL is refused."""

import pytest

from tests.app_process import running_app
from tests.browser import chromium_page

pytestmark = pytest.mark.browser


def test_the_printed_admin_url_opens_the_cockpit_and_the_bare_one_does_not(tmp_path):
    with running_app(tmp_path) as app:
        with chromium_page() as page:
            page.goto(app.admin_url)
            page.locator("#m3-admin-status .m3a-status-card").wait_for(timeout=60_000)
            assert page.url == app.url + "/admin/", "the token stays out of the address bar and history"
            page.wait_for_function(
                "document.querySelector('#m3-admin-status .m3a-status-card').dataset.engineState === 'ready'",
                timeout=60_000)  # the 1 s status timer's calls go through with the cookie
        with chromium_page() as page:
            refused = page.goto(app.url + "/admin/")
            assert refused.status == 403
            assert "admin URL printed" in page.inner_text("body")
