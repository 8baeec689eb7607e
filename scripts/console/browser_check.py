#!/usr/bin/env python3
"""Drive the live console in headless Chromium over the Chrome DevTools Protocol.

Usage: browser_check.py URL [--screenshot PNG] [--timeout S]

Opens URL (the console of a running test) in Debian's `chromium --headless`, waits until the
page has received several updates and its plots keep receiving newer samples, saves a
screenshot, presses the stop button, checks that the page asks for a confirmation, confirms,
and waits until the page reports the stop request accepted. Prints one JSON line with what
it saw; exits non-zero on any failure. Standard library only (a minimal websocket client).
"""
import base64, json, os, shutil, socket, struct, subprocess, sys, tempfile, time, urllib.request


class WebSocket:
    """The client side of RFC 6455, text frames only, enough for the DevTools protocol."""

    def __init__(self, url, timeout):
        assert url.startswith("ws://")
        hostport, path = url[5:].split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
             f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise RuntimeError("websocket handshake: connection closed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError(f"websocket handshake refused: {head[:200]!r}")
        self.next_id = 0

    def _recv_exact(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise RuntimeError("websocket closed")
            out += chunk
        return out

    def send(self, text):
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            head = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def recv(self):
        message = b""
        while True:
            b0, b1 = self._recv_exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._recv_exact(8))[0]
            if b1 & 0x80:
                self._recv_exact(4)
            payload = self._recv_exact(n)
            opcode = b0 & 0x0F
            if opcode == 0x8:
                raise RuntimeError("websocket closed by the browser")
            if opcode in (0x9, 0xA):
                continue
            message += payload
            if b0 & 0x80:
                return message.decode()

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


def evaluate(ws, expr):
    r = ws.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
    if "exceptionDetails" in r:
        raise RuntimeError(f"{expr}: {r['exceptionDetails']}")
    return r["result"].get("value")


def wait_for(ws, expr, deadline, what):
    while time.time() < deadline:
        v = evaluate(ws, expr)
        if v:
            return v
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what} ({expr})")


def start_chromium(profile_prefix, window_size, deadline):
    """Start headless Chromium with a fresh profile and its DevTools port open; returns the
    process, the profile folder and the WebSocket URL of its page. Exits with status 3 when no
    Chromium is installed. Stop it with `stop_chromium`."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not exe:
        print("chromium not found", file=sys.stderr)
        sys.exit(3)
    profile = tempfile.mkdtemp(prefix=profile_prefix)
    proc = subprocess.Popen(
        [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-extensions", "--disable-background-networking", "--remote-debugging-port=0",
         f"--user-data-dir={profile}", f"--window-size={window_size}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        while not os.path.exists(port_file) or not open(port_file).read().strip():
            if time.time() > deadline or proc.poll() is not None:
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(open(port_file).read().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(t for t in targets if t.get("type") == "page")
        return proc, profile, page["webSocketDebuggerUrl"]
    except Exception:
        stop_chromium(proc, profile)
        raise


def stop_chromium(proc, profile):
    """End a browser from `start_chromium` (bounded wait) and remove its profile."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    shutil.rmtree(profile, ignore_errors=True)


def main():
    args = sys.argv[1:]
    url = args[0]
    shot = args[args.index("--screenshot") + 1] if "--screenshot" in args else None
    timeout = float(args[args.index("--timeout") + 1]) if "--timeout" in args else 60.0
    deadline = time.time() + timeout
    proc, profile, page_url = start_chromium("hybridsim-console-chromium-", "1500,1900", deadline)
    try:
        ws = WebSocket(page_url, timeout=20)
        ws.call("Page.enable")
        ws.call("Page.navigate", url=url)
        wait_for(ws, "!!(window.consoleState && window.consoleState.updates >= 3)", deadline, "3 updates")
        probe = ("[window.consoleState.updates, window.consoleState.received, "
                 "window.consoleState.lastTime, window.consoleState.points, "
                 "document.getElementById('frame').textContent]")
        first = evaluate(ws, probe)
        time.sleep(1.5)
        later = evaluate(ws, probe)
        # More updates, more plotted samples received, a later newest sample, the counter shown.
        if not (later[0] > first[0] and later[1] > first[1] and later[2] > first[2]
                and later[3] > 0 and later[4] != first[4]):
            raise RuntimeError(f"the page did not update: {first} then {later}")
        canvases = evaluate(ws, "document.querySelectorAll('canvas').length")
        if shot:
            png = ws.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
            with open(shot, "wb") as f:
                f.write(base64.b64decode(png))
        # First action: arm. The page must ask for a confirmation and not stop yet.
        evaluate(ws, "document.getElementById('stop').click()")
        wait_for(ws, "!document.getElementById('confirm').hidden", deadline, "the confirm button")
        armed_text = evaluate(ws, "document.getElementById('message').textContent")
        # Second action: confirm.
        evaluate(ws, "document.getElementById('confirm').click()")
        wait_for(ws, "window.consoleState.stopRequested === true", deadline, "the stop request")
        # The page then shows the outcome once the run has ended (during the linger).
        status = ""
        end = min(deadline, time.time() + 20)
        while time.time() < end:
            try:
                status = evaluate(ws, "document.getElementById('status').textContent")
            except RuntimeError:
                break
            if status.startswith("stopped"):
                break
            time.sleep(0.2)
        print(json.dumps({"first": first, "later": later, "canvases": canvases,
                          "armed_message": armed_text, "final_status": status}))
    finally:
        stop_chromium(proc, profile)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line naming what failed
        print(f"browser check failed: {e}", file=sys.stderr)
        sys.exit(1)
