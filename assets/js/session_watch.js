// Signed-out pages reload to the sign-in page within seconds. The server ends a session when its account is
// disabled, demoted, its password changed or its login expired (m3ui/web/logins.py), but an idle page would keep
// showing what it showed: this asks m3ui every few seconds whether the page is still signed in (its own route,
// m3ui/web/login_route.py), and reloads once it is not. Only a change from signed in to signed out reloads.
(() => {
  const EVERY_MS = 3000;
  const base = location.pathname.startsWith("/admin") ? "/admin" : "";
  let signedIn = null;
  setInterval(async () => {
    let status;
    try {
      status = (await fetch(`${base}/m3ui-session`, {credentials: "same-origin", cache: "no-store"})).status;
    } catch {
      return; // the app is restarting: nothing to decide
    }
    if (status === 401 && signedIn) location.reload();
    if (status === 200 || status === 401) signedIn = status === 200;
  }, EVERY_MS);
})();
