// Signed-out pages reload to the login form within seconds. The server ends a session when its account is
// disabled, demoted or its login expired (m3ui/web/session_guard.py), but an idle page would keep showing what
// it showed: this asks the app every few seconds whether the page is still signed in, and reloads once it is
// not. Only a change from signed in to signed out reloads (a login page stays put).
(() => {
  const EVERY_MS = 3000;
  const base = location.pathname.startsWith("/admin") ? "/admin" : "";
  let signedIn = null;
  setInterval(async () => {
    let status;
    try {
      status = (await fetch(`${base}/gradio_api/login_check`, {credentials: "same-origin", cache: "no-store"})).status;
    } catch {
      return; // the app is restarting: nothing to decide
    }
    if (status === 401 && signedIn) location.reload();
    if (status === 200 || status === 401) signedIn = status === 200;
  }, EVERY_MS);
})();
