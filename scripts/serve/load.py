#!/usr/bin/env python3
"""Local load for `yolo serve` (stdlib only, asyncio, kept-alive HTTP/1.1 connections).

Requests mode: --clients connections post photos (DeepStack's multipart, or the raw image to
/detect) back to back for --seconds after --warmup (longer when --min-ok says so); counts the
answers that arrive in that window by status (only 200 and 503
are expected), reports throughput, latency percentiles and the server's RSS each second
(--pid). Live mode (--live-clients N): the live stream's FPS (the frames published, counted on
/events) for --seconds with no extra client, then with N clients reading /video.mjpg as fast as
they can, --rounds times alternated. Prints one JSON object."""
import argparse, asyncio, json, os, re, sys, time

BOUNDARY = "yolo-load-boundary"


def rss_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None


async def read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return status, headers, body


def request_bytes(host, port, endpoint, name, data):
    if endpoint == "/detect":
        body, ctype = data, "application/octet-stream"
        path = f"/detect?name={name}"
    else:
        body = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"{name}\"\r\n"
                f"Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{BOUNDARY}--\r\n".encode()
        ctype, path = f"multipart/form-data; boundary={BOUNDARY}", endpoint
    return (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


async def requests_mode(a, host, port):
    payloads = [request_bytes(host, port, a.endpoint, os.path.basename(p), open(p, "rb").read()) for p in a.images]
    start = time.monotonic()
    measure_from = start + a.warmup
    window = {"end": measure_from + a.seconds}  # extended (up to --max-seconds) until --min-ok answers
    statuses, latencies, errors, rss = {}, [], [], []

    def end():
        if time.monotonic() >= window["end"] and statuses.get(200, 0) < a.min_ok \
                and window["end"] < measure_from + a.max_seconds:
            window["end"] += 1
        return window["end"]

    async def client(i):
        k = i
        conn = None
        while time.monotonic() < end():
            try:
                if conn is None:
                    conn = await asyncio.open_connection(host, port)
                reader, writer = conn
                t0 = time.monotonic()
                writer.write(payloads[k % len(payloads)])
                k += 1
                await writer.drain()
                status, headers, _ = await asyncio.wait_for(read_response(reader), timeout=60)
                t1 = time.monotonic()
                if measure_from <= t1 <= end():
                    statuses[status] = statuses.get(status, 0) + 1
                    if status == 200:
                        latencies.append(t1 - t0)
                    elif status != 503:
                        errors.append(f"status {status}")
                if headers.get("connection", "").lower() == "close":
                    writer.close()
                    conn = None
                if status == 503:
                    await asyncio.sleep(0.02)  # the server said busy: back off a little
            except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
                if measure_from <= time.monotonic() <= end():
                    errors.append(f"{type(e).__name__}: {e}")
                conn = None
                await asyncio.sleep(0.05)
        if conn:
            conn[1].close()

    async def sample_rss():
        while time.monotonic() < end():
            await asyncio.sleep(1)
            if a.pid and time.monotonic() >= measure_from:
                rss.append(round(rss_mb(a.pid) or 0, 1))

    await asyncio.gather(sample_rss(), *(client(i) for i in range(a.clients)))
    latencies.sort()

    def pct(p):
        return round(1000 * latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))], 1) if latencies else None
    ok, seconds = statuses.get(200, 0), window["end"] - measure_from
    result = {"mode": "requests", "clients": a.clients, "seconds": round(seconds, 1), "endpoint": a.endpoint,
              "statuses": {str(k): v for k, v in sorted(statuses.items())}, "errors": len(errors), "error_samples": errors[:5],
              "throughput_per_s": round(ok / seconds, 1),
              "latency_ms": {"p50": pct(50), "p90": pct(90), "p99": pct(99), "max": pct(100)}, "rss_mb": rss}
    if len(rss) >= 30:
        result["rss_growth_10s_to_30s"] = round(rss[29] / rss[9] - 1, 4)
    return result


async def count_frames(host, port, seconds):
    """Frames published during `seconds`, counted on /events (a fast reader gets every one
    unless the server publishes faster than it can send)."""
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET /events HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    await writer.drain()
    await reader.readuntil(b"\r\n\r\n")
    frames, first, last, end = 0, None, None, time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            line = await asyncio.wait_for(reader.readline(), timeout=max(0.1, end - time.monotonic()))
        except asyncio.TimeoutError:
            break
        m = re.match(rb'data: \{"frame": (\d+)', line)
        if m:
            n = int(m.group(1))
            first = n if first is None else first
            last = n
            frames += 1
    writer.close()
    return frames / seconds, (last - first) if first is not None else 0


async def mjpeg_reader(host, port, stop, counts, i):
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET /video.mjpg HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    await writer.drain()
    while not stop.is_set():
        chunk = await reader.read(1 << 16)
        if not chunk:
            break
        counts[i] += chunk.count(b"Content-Type: image/jpeg")
    writer.close()


async def live_mode(a, host, port):
    # Rounds of (no client, then --live-clients readers), each phase --seconds long: this machine's
    # speed drifts over minutes, so the two are interleaved and compared in total.
    base, loaded, per_client = [], [], []
    for _ in range(a.rounds):
        base.append((await count_frames(host, port, a.seconds))[0])
        stop, counts = asyncio.Event(), [0] * a.live_clients
        readers = [asyncio.create_task(mjpeg_reader(host, port, stop, counts, i)) for i in range(a.live_clients)]
        await asyncio.sleep(1)
        counts[:] = [0] * a.live_clients
        loaded.append((await count_frames(host, port, a.seconds))[0])
        per_client += [round(c / a.seconds, 1) for c in counts]
        stop.set()
        for r in readers:
            r.cancel()
        await asyncio.sleep(0.5)
    base_fps, loaded_fps = sum(base) / len(base), sum(loaded) / len(loaded)
    return {"mode": "live", "seconds": a.seconds, "rounds": a.rounds,
            "fps_without_clients": round(base_fps, 2), "fps_with_clients": round(loaded_fps, 2),
            "rounds_fps": [[round(x, 1), round(y, 1)] for x, y in zip(base, loaded)], "live_clients": a.live_clients,
            "client_fps_min": min(per_client) if per_client else None, "client_fps_max": max(per_client) if per_client else None,
            "fps_ratio": round(loaded_fps / base_fps, 3) if base_fps else None}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--min-ok", type=int, default=0, help="extend the window until this many answers are 200")
    ap.add_argument("--max-seconds", type=float, default=120, help="... but no longer than this")
    ap.add_argument("--endpoint", default="/v1/vision/detection")
    ap.add_argument("--pid", type=int)
    ap.add_argument("--live-clients", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3, help="live mode: rounds of (no client, clients)")
    ap.add_argument("images", nargs="*")
    a = ap.parse_args()
    run = live_mode(a, "127.0.0.1", a.port) if a.live_clients else requests_mode(a, "127.0.0.1", a.port)
    print(json.dumps(asyncio.run(run)))


if __name__ == "__main__":
    sys.exit(main())
