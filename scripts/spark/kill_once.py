#!/usr/bin/env python3
"""The Spark test's stand-in for the yolo binary: runs the real one ($YOLO_REAL) with the same
arguments, stdin and stderr, and passes its JSON lines through. The first invocation that claims
the marker file ($YOLO_KILL_MARKER, created exclusively) kills its yolo with SIGKILL after
$YOLO_KILL_AFTER lines, in the middle of its partition (as the kernel's OOM killer would), and
ends the same way; every later one runs yolo untouched. Each invocation appends its pid to
$YOLO_KILL_MARKER.log, so the test can count the task attempts."""
import os
import signal
import subprocess
import sys

real = os.environ["YOLO_REAL"]
marker = os.environ["YOLO_KILL_MARKER"]
after = int(os.environ.get("YOLO_KILL_AFTER", "10"))
with open(marker + ".log", "a") as log:
    log.write(f"{os.getpid()}\n")
try:
    claim = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
except FileExistsError:
    os.execv(real, [real] + sys.argv[1:])

yolo = subprocess.Popen([real] + sys.argv[1:], stdout=subprocess.PIPE)
lines = 0
for line in yolo.stdout:
    sys.stdout.buffer.write(line)
    sys.stdout.flush()
    lines += 1
    if lines == after:
        yolo.send_signal(signal.SIGKILL)
        break
yolo.wait()
os.write(claim, f"killed yolo (pid {yolo.pid}) after {lines} lines: status {yolo.returncode}\n".encode())
os.close(claim)
sys.stdout.flush()
os.kill(os.getpid(), signal.SIGKILL)
