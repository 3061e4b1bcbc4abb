#!/usr/bin/env python3
"""Opens `yolo serve`'s live view in headless Chromium (driven over its DevTools protocol),
waits until the page shows the video, an FPS figure and detections, takes a screenshot, moves
the threshold slider with the mouse to its top and waits until the detections change (none at
0.97), and takes a second screenshot. Prints one JSON line; exit status 0 when all went so.
Every wait is bounded; Chromium is stopped at the end."""
import argparse, base64, json, os, shutil, subprocess, sys, tempfile, time, urllib.request

import websocket


class Page:
    def __init__(self, ws_url):
        self.ws = websocket.create_connection(ws_url, timeout=30, suppress_origin=True)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def js(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return r.get("result", {}).get("value")

    def wait_for(self, expression, seconds, what):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.25)
        raise RuntimeError(f"timed out after {seconds} s waiting for {what}")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))


STATE_OBJECT = """({fps: document.getElementById('fps').textContent,
  count: Number(document.getElementById('count').dataset.count),
  thresh: Number(document.getElementById('count').dataset.thresh),
  frame: document.getElementById('frame').textContent,
  video: document.getElementById('video').naturalWidth,
  items: [...document.querySelectorAll('#detections li')].map(li => li.textContent)})"""
STATE = f"JSON.stringify({STATE_OBJECT})"


def until(condition):
    """A JS expression: the page's state as JSON once `condition` (on s) holds, else null."""
    return f"(() => {{ const s = {STATE_OBJECT}; return ({condition}) ? JSON.stringify(s) : null; }})()"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--out", required=True, help="directory for the screenshots")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    ap.add_argument("--timeout", type=float, default=90)
    a = ap.parse_args()
    profile = tempfile.mkdtemp(prefix="yolo-chromium-")
    browser = subprocess.Popen([a.chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                "--no-first-run", "--remote-debugging-port=0", "--remote-allow-origins=*",
                                f"--user-data-dir={profile}", "--window-size=1280,800", "about:blank"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    result = {"ok": False}
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.monotonic() + 60
        while not (os.path.exists(port_file) and open(port_file).read().count("\n") >= 1):
            if time.monotonic() > deadline or browser.poll() is not None:
                raise RuntimeError("Chromium did not start its DevTools server")
            time.sleep(0.2)
        port = int(open(port_file).read().split()[0])
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = Page(next(t for t in targets if t["type"] == "page")["webSocketDebuggerUrl"])
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call("Page.navigate", url=a.url)
        page.wait_for(until("s.video > 0 && s.count > 0 && Number(s.fps) > 0"), a.timeout,
                      "the video, an FPS figure and detections")
        time.sleep(1)  # a few more frames, so the screenshot shows a steady page
        before = json.loads(page.js(STATE))
        page.screenshot(os.path.join(a.out, "live-view.png"))
        rect = json.loads(page.js("JSON.stringify(document.getElementById('thresh').getBoundingClientRect())"))
        x, y = rect["x"] + rect["width"] - 2, rect["y"] + rect["height"] / 2
        for kind in ("mousePressed", "mouseReleased"):
            page.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
        slider = float(page.js("document.getElementById('thresh').value"))
        after = json.loads(page.wait_for(until("s.thresh >= 0.9 && s.count === 0"), a.timeout,
                                         "frames detected at the new threshold"))
        time.sleep(1)  # the video catches up with the new threshold too
        page.screenshot(os.path.join(a.out, "live-view-threshold.png"))
        result = {"ok": True, "before": before, "slider": slider, "after": after}
    except Exception as e:  # reported in the JSON, for the test's message
        result["error"] = f"{type(e).__name__}: {e}"
    finally:
        browser.terminate()
        try:
            browser.wait(timeout=10)
        except subprocess.TimeoutExpired:
            browser.kill()
            browser.wait()
        shutil.rmtree(profile, ignore_errors=True)
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
