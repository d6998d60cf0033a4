# Test scaffolding: polls every host's /health from the controller until a stop file appears, one JSON line
# per round: {"t": seconds since start, "up": {host: true|false}}.
#   python3 poller.py OUT.jsonl STOPFILE host=http://ip:8000 ...
import json
import os
import sys
import time
import urllib.request


def healthy(url):
    try:
        with urllib.request.urlopen(url + "/health", timeout=1) as resp:
            return resp.status == 200
    except OSError:
        return False


def main():
    out, stop = sys.argv[1], sys.argv[2]
    targets = dict(arg.split("=", 1) for arg in sys.argv[3:])
    t0 = time.time()
    with open(out, "w") as f:
        while not os.path.exists(stop):
            up = {host: healthy(url) for host, url in targets.items()}
            f.write(json.dumps({"t": round(time.time() - t0, 3), "wall": time.time(), "up": up}) + "\n")
            f.flush()
            time.sleep(0.1)


if __name__ == "__main__":
    main()
