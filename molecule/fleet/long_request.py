# Test scaffolding: one long chat completion (ignore_eos, max_tokens tokens of emulated decoding) against a
# host, recording when it started and ended and what came back.
#   python3 long_request.py OUT.json http://ip:8000 API_KEY MAX_TOKENS
import json
import sys
import time
import urllib.request


def main():
    out, url, key, max_tokens = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    body = json.dumps({"model": "glm53-flash-awq", "messages": [{"role": "user", "content": "Hello"}],
                       "max_tokens": max_tokens, "ignore_eos": True}).encode()
    req = urllib.request.Request(url + "/v1/chat/completions", data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": "Bearer " + key})
    record = {"started": time.time()}
    try:
        with urllib.request.urlopen(req, timeout=300) as resp:
            data = json.load(resp)
            record.update(status=resp.status, completion_tokens=data["usage"]["completion_tokens"],
                          finish_reason=data["choices"][0]["finish_reason"])
    except Exception as exc:  # the test reads the failure from the record
        record.update(status=None, error="%s: %s" % (type(exc).__name__, exc))
    record["ended"] = time.time()
    with open(out, "w") as f:
        json.dump(record, f)


if __name__ == "__main__":
    main()
