#!/usr/bin/python3
"""Load figure for `lens collect` over OTLP/HTTP (BENCHMARKS.md, issue 24): SLOW connections
sending their headers a byte a second and IDLE ones that send nothing, while one healthy client
posts HEALTHY (50) requests one after another. Prints the healthy requests' latency (median, max) and the
collector's peak RSS.
Usage: bench/collect_http_slow_clients.py LENS_BINARY [SLOW=200] [IDLE=200] [HEALTHY=50]"""
import json, os, socket, statistics, subprocess, sys, tempfile, threading, time, urllib.request

lens = sys.argv[1]
slow_count = int(sys.argv[2]) if len(sys.argv) > 2 else 200
idle_count = int(sys.argv[3]) if len(sys.argv) > 3 else 200
healthy_count = int(sys.argv[4]) if len(sys.argv) > 4 else 50
work = tempfile.mkdtemp()
collector = subprocess.Popen([lens, "collect", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0",
                              "--out", work + "/out"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
http = collector.stdout.readline().split(" http=")[1].split()[0]
host, port = http.rsplit(":", 1)
slow = [socket.create_connection((host, int(port))) for _ in range(slow_count)]
idle = [socket.create_connection((host, int(port))) for _ in range(idle_count)]
done = threading.Event()

def trickle():
    request = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nX-Slow: "
    i = 0
    while not done.is_set():
        for s in slow:
            try:
                s.send(request[i:i + 1] if i < len(request) else b"a")
            except OSError:
                pass
        i += 1
        done.wait(1.0)

thread = threading.Thread(target=trickle)
thread.start()
time.sleep(0.5)
latencies = []
failures = 0
for i in range(healthy_count):
    start = time.monotonic()
    try:
        req = urllib.request.Request("http://" + http + "/v1/traces", data=b"{}",
                                     headers={"Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=10).read()
    except OSError:
        failures += 1
    latencies.append(time.monotonic() - start)
with open(f"/proc/{collector.pid}/status") as status:
    peak_kib = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:"))
done.set()
thread.join()
for s in slow + idle:
    s.close()
collector.terminate()
collector.wait(timeout=30)
print(json.dumps({"slow": slow_count, "idle": idle_count, "healthy_requests": len(latencies),
                  "failed": failures, "median_ms": round(statistics.median(latencies) * 1000, 1),
                  "max_ms": round(max(latencies) * 1000, 1),
                  "collector_peak_rss_mib": round(peak_kib / 1024, 1)}))
