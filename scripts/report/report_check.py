#!/usr/bin/env python3
"""Load a `hybridsim report` HTML file in headless Chromium and check that it renders.

Usage: report_check.py REPORT.html [--screenshot PNG] [--timeout S]

Opens the file (file:// URL) in Debian's `chromium --headless` over the Chrome DevTools
Protocol, waits for the load event, then checks that
- every <figure> holds an <svg> that is rendered with a non-zero size,
- the console received no error (console.error, an uncaught exception, a log entry of level
  error) and the page made no request other than the file itself (no network fetch),
and saves a full-page screenshot. Prints one JSON line with what it saw; exits non-zero on any
failure, with one line on standard error naming it. Standard library only; the websocket
client is the one of scripts/console/browser_check.py.
"""
import base64, json, os, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "console"))
from browser_check import WebSocket, start_chromium, stop_chromium  # noqa: E402


class RecordingSocket(WebSocket):
    """A DevTools connection that keeps the events it reads while waiting for answers."""

    def __init__(self, url, timeout):
        super().__init__(url, timeout)
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        my = self.next_id
        self.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)


def evaluate(ws, expr):
    r = ws.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
    if "exceptionDetails" in r:
        raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
    return r["result"].get("value")


FIGURES = """(() => Array.from(document.querySelectorAll('figure')).map(f => {
  const s = f.querySelector('svg');
  const r = s ? s.getBoundingClientRect() : {width: 0, height: 0};
  const texts = s ? s.querySelectorAll('text').length : 0;
  const lines = s ? s.querySelectorAll('polyline, path, line').length : 0;
  return {id: f.id, width: r.width, height: r.height, texts: texts, lines: lines};
}))()"""


def main():
    args = sys.argv[1:]
    path = os.path.abspath(args[0])
    shot = args[args.index("--screenshot") + 1] if "--screenshot" in args else None
    timeout = float(args[args.index("--timeout") + 1]) if "--timeout" in args else 60.0
    deadline = time.time() + timeout
    url = "file://" + path
    proc, profile, page_url = start_chromium("hybridsim-report-chromium-", "1280,1000", deadline)
    try:
        ws = RecordingSocket(page_url, timeout=30)
        for domain in ("Page", "Runtime", "Log", "Network"):
            ws.call(f"{domain}.enable")
        ws.events.clear()
        ws.call("Page.navigate", url=url)
        while evaluate(ws, "document.readyState") != "complete":
            if time.time() > deadline:
                raise RuntimeError("the page did not finish loading")
            time.sleep(0.2)
        time.sleep(0.5)
        figures = evaluate(ws, FIGURES)
        sections = evaluate(ws, "Array.from(document.querySelectorAll('section')).map(s => s.id)")
        errors, requests = [], []
        for e in ws.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append(json.dumps(p.get("args", []))[:300])
            elif m == "Runtime.exceptionThrown":
                errors.append(json.dumps(p.get("exceptionDetails", {}))[:300])
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                errors.append(p["entry"].get("text", "")[:300])
            elif m == "Network.requestWillBeSent":
                u = p.get("request", {}).get("url", "")
                if u != url and not u.startswith("data:"):
                    requests.append(u)
        if shot:
            png = ws.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
            with open(shot, "wb") as f:
                f.write(base64.b64decode(png))
        print(json.dumps({"figures": figures, "sections": sections, "console_errors": errors,
                          "requests": requests}))
        empty = [f["id"] for f in figures if not (f["width"] > 0 and f["height"] > 0)]
        if not figures:
            raise RuntimeError("the page has no figure")
        if empty:
            raise RuntimeError(f"figures not rendered (zero size): {empty}")
        if errors:
            raise RuntimeError(f"console errors: {errors}")
        if requests:
            raise RuntimeError(f"the page fetched other resources: {requests}")
    finally:
        stop_chromium(proc, profile)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line naming what failed
        print(f"report check failed: {e}", file=sys.stderr)
        sys.exit(1)
