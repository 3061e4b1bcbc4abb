#!/usr/bin/env python3
"""Hostile clients against a running `yolo serve`, one case per run (--case): each attack must
get its 4xx answer or a closed connection within its bound, and meanwhile a good client's
requests (POST /detect with a real photo, from 127.0.0.1) must keep succeeding. The server is
expected to run with --max-body 2000000 --timeout 2 --body-timeout 3 --max-connections-per-ip 32.
Prints one JSON line ({"case", "ok", "details", "good"}); exit status 0 when ok. Stdlib only."""
import argparse, json, socket, struct, sys, threading, time, zlib

HOST = "127.0.0.1"


def connect(port, source=None, timeout=10):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if source:
        s.bind((source, 0))
    s.connect((HOST, port))
    return s


def read_response(s, limit=1 << 20):
    """Status, headers and body of one response (by Content-Length), or (None, .., ..) if closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return None, {}, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
    length = int(headers.get("content-length", "0"))
    while len(body) < min(length, limit):
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body


def closed_within(s, seconds):
    """Whether the server closes `s` (EOF or reset) within `seconds`; how long it took."""
    start = time.monotonic()
    s.settimeout(0.2)
    while time.monotonic() - start < seconds:
        try:
            if s.recv(65536) == b"":
                return True, time.monotonic() - start
        except socket.timeout:
            continue
        except OSError:
            return True, time.monotonic() - start
    return False, seconds


def multipart(fields, boundary="yolo-boundary"):
    out = b""
    for name, (filename, data) in fields.items():
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n".encode()
        if filename:
            out += b"Content-Type: application/octet-stream\r\n"
        out += b"\r\n" + data + b"\r\n"
    return out + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def post(port, path, body, content_type, source=None):
    s = connect(port, source, timeout=60)
    try:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: {content_type}\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        return read_response(s)
    finally:
        s.close()


class GoodClient(threading.Thread):
    """Posts a real photo to /detect again and again until stopped; counts the outcomes."""
    def __init__(self, port, image):
        super().__init__(daemon=True)
        self.port, self.image = port, open(image, "rb").read()
        self.ok, self.failed, self.errors = 0, 0, []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            start = time.monotonic()
            try:
                status, _, body = post(self.port, "/detect?name=good.png", self.image, "image/png")
                if status == 200 and b'"detections"' in body:
                    self.ok += 1
                else:
                    self.failed += 1
                    self.errors.append(f"{status} {body[:200]!r} after {time.monotonic() - start:.2f} s")
            except OSError as e:
                self.failed += 1
                self.errors.append(f"{e!r} after {time.monotonic() - start:.2f} s")
            self.stopping.wait(0.2)

    def finish(self):
        # At least one good request completes after the attack began.
        deadline = time.monotonic() + 60
        while self.ok == 0 and self.failed == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        self.stopping.set()
        self.join(timeout=90)
        return {"ok": self.ok, "failed": self.failed, "errors": self.errors[:3]}


def png(width, height, idat):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", idat) + chunk(b"IEND", b""))


def case_oversized(port):
    details, ok = {}, True
    s = connect(port)
    s.sendall(f"POST /v1/vision/detection HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: multipart/form-data; boundary=b\r\n"
              f"Content-Length: 50000000\r\n\r\n".encode())  # the headers only: the answer comes before the body
    status, _, body = read_response(s)
    details["declared_50MB"] = {"status": status, "body": body[:160].decode("latin-1")}
    ok &= status == 413 and b'"success": false' in body
    closed, _ = closed_within(s, 10)
    details["declared_50MB"]["closed"] = closed
    ok &= closed
    s.close()
    # Chunked, no declared length: cut off once past the limit (the answer cannot be sent mid-upload).
    s = connect(port)
    s.sendall(f"POST /detect HTTP/1.1\r\nHost: {HOST}\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
    sent, chunk = 0, b"x" * 65536
    try:
        while sent < 50_000_000:
            s.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
            sent += len(chunk)
    except OSError:
        pass
    closed, _ = closed_within(s, 10)
    details["chunked"] = {"sent_before_close": sent, "closed": closed}
    ok &= closed and sent < 50_000_000
    s.close()
    return ok, details


def case_truncated_multipart(port, image):
    body, ctype = multipart({"image": ("photo.png", open(image, "rb").read())})
    cut = body[: len(body) // 2]  # declared as complete, but the closing boundary never comes
    status, _, answer = post(port, "/v1/vision/detection", cut, ctype)
    details = {"status": status, "body": answer[:200].decode("latin-1")}
    ok = status == 400 and b'"success": false' in answer
    # A body shorter than its declared length, then the client goes: the server just forgets it.
    s = connect(port)
    s.sendall(f"POST /v1/vision/detection HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: {ctype}\r\n"
              f"Content-Length: {len(body)}\r\n\r\n".encode() + cut)
    s.close()
    return ok, details


def case_not_image(port):
    body, ctype = multipart({"image": ("notes.txt", b"these are not the pixels you are looking for\n" * 20)})
    status, _, answer = post(port, "/v1/vision/detection", body, ctype)
    details = {"status": status, "body": answer[:200].decode("latin-1")}
    return status == 415 and b"not an image" in answer, details


def case_bomb(port):
    details, ok = {}, True
    empty = zlib.compress(b"")
    for name, width, expected, phrase in (("huge", 10000, 413, b"too large"), ("bomb", 5000, 400, b"decompression bomb")):
        status, _, answer = post(port, "/detect?name=" + name + ".png", png(width, width, empty), "image/png")
        details[name] = {"status": status, "body": answer[:220].decode("latin-1")}
        ok &= status == expected and phrase in answer
    return ok, details


def drip(port, head, seconds=60):
    """Sends `head` at once, then one byte a second until the server closes (at most `seconds`)."""
    s = connect(port)
    start, closed = time.monotonic(), False
    s.sendall(head)
    for _ in range(seconds):
        try:
            s.sendall(b"a")
        except OSError:
            closed = True
            break
        if closed_within(s, 1.0)[0]:
            closed = True
            break
    s.close()
    return {"closed": closed, "after_s": round(time.monotonic() - start, 1)}


def case_slowloris(port):
    headers = drip(port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    body = drip(port, b"POST /detect HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: image/png\r\nContent-Length: 1000\r\n\r\n")
    details = {"headers": dict(headers, timeout_s=2), "body": dict(body, timeout_s=3)}
    return headers["closed"] and body["closed"], details


def case_idle_flood(port, count=1000):
    # From another loopback address than the good client's. Loopback has no per-address cap (every
    # local program shares it): past the connection limit less a reserve, the longest idle are closed.
    sockets, refused = [], 0
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind(("127.0.0.2", 0))
        if s.connect_ex((HOST, port)) not in (0, 115):  # EINPROGRESS
            refused += 1
            s.close()
            continue
        sockets.append(s)
    deadline, open_after = time.monotonic() + 60, None
    while time.monotonic() < deadline:
        alive = []
        for s in sockets:
            try:
                if s.recv(1) == b"":
                    s.close()
                    continue
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                continue
            alive.append(s)
        sockets = alive
        if open_after is None:
            open_after = len(sockets)  # after the first pass: those not closed to make room
        if not sockets:
            break
        time.sleep(0.25)
    details = {"opened": count, "refused_at_connect": refused, "open_after_first_pass": open_after,
               "still_open_after_60s": len(sockets)}
    for s in sockets:
        s.close()
    return len(sockets) == 0, details


def case_malformed(port):
    details, ok = {}, True
    for name, raw, expect in (("garbage", b"HELLO THERE\r\n\r\n", (400,)),
                              ("bad_length", b"POST /detect HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: banana\r\n\r\n", (400,)),
                              ("huge_header", b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"z" * 200_000 + b"\r\n\r\n", (400, 413, 431)),
                              ("method", b"DELETE /detect HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", (405,)),
                              ("no_such_path", b"GET /../../etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", (400, 404))):
        s = connect(port)
        try:
            s.sendall(raw)
        except OSError:
            pass
        try:
            status, _, _ = read_response(s)
        except OSError:
            status = None
        closed = status is None
        details[name] = {"status": status}
        ok &= status in expect or (closed and name == "huge_header")
        s.close()
    return ok, details


def dropped(port):
    """The server's yolo_connections_dropped_total counters, by reason."""
    try:
        s = connect(port)
        s.sendall(f"GET /metrics HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
        _, _, body = read_response(s)
        s.close()
    except OSError as e:
        return repr(e)
    return [l for l in body.decode("latin-1").splitlines() if l.startswith("yolo_connections_dropped_total")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--case", required=True)
    ap.add_argument("--image", required=True, help="a real photo for the good client (PNG)")
    a = ap.parse_args()
    good = GoodClient(a.port, a.image)
    good.start()
    cases = {"oversized": lambda: case_oversized(a.port),
             "truncated_multipart": lambda: case_truncated_multipart(a.port, a.image),
             "not_image": lambda: case_not_image(a.port),
             "bomb": lambda: case_bomb(a.port),
             "slowloris": lambda: case_slowloris(a.port),
             "idle_flood": lambda: case_idle_flood(a.port),
             "malformed": lambda: case_malformed(a.port)}
    try:
        ok, details = cases[a.case]()
    except Exception as e:
        ok, details = False, {"exception": f"{type(e).__name__}: {e}"}
    g = good.finish()
    if g["failed"]:
        g["dropped"] = dropped(a.port)  # why the server closed connections, for the failure's message
    result = {"case": a.case, "ok": bool(ok and g["ok"] > 0 and g["failed"] == 0), "details": details, "good": g}
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
