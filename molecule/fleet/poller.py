# Test scaffolding: polls every host's /health from the controller until a stop file appears, one JSON line
# per round: {"t": seconds since start, "up": {host: true|false}, "why": {host: why it did not answer}}; with
# --upstream=FILE also "admitted": the hosts the load balancer's upstream file lists and does not mark down.
# why: "timeout" (the server took the connection and answered late or not at all: alive, slow), "refused" (nothing
# listens: the engine is stopped or loading), or "http NNN".
#   python3 poller.py OUT.jsonl STOPFILE [--upstream=FILE] host=http://ip:8000 ...
import json
import os
import socket
import sys
import time
import urllib.error
import urllib.request


def health(url):
    """None when /health answered 200, else why not."""
    try:
        with urllib.request.urlopen(url + "/health", timeout=1) as resp:
            return None if resp.status == 200 else "http %d" % resp.status
    except urllib.error.HTTPError as exc:
        return "http %d" % exc.code
    except (socket.timeout, TimeoutError):
        return "timeout"
    except urllib.error.URLError as exc:
        return "timeout" if isinstance(exc.reason, (socket.timeout, TimeoutError)) else "refused"
    except OSError:
        return "refused"


def admitted(path, hosts):
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    return sorted(h for h in hosts if any(line.rstrip().endswith("# " + h) and " down;" not in line
                                          and line.strip().startswith("server") for line in lines))


def main():
    out, stop = sys.argv[1], sys.argv[2]
    upstream = next((a.split("=", 1)[1] for a in sys.argv[3:] if a.startswith("--upstream=")), None)
    targets = dict(arg.split("=", 1) for arg in sys.argv[3:] if not arg.startswith("--"))
    t0 = time.time()
    with open(out, "w") as f:
        while not os.path.exists(stop):
            why = {host: health(url) for host, url in targets.items()}
            row = {"t": round(time.time() - t0, 3), "wall": time.time(), "up": {h: w is None for h, w in why.items()},
                   "why": {h: w for h, w in why.items() if w}}
            if upstream:
                row["admitted"] = admitted(upstream, targets)
            f.write(json.dumps(row) + "\n")
            f.flush()
            time.sleep(0.1)


if __name__ == "__main__":
    main()
