# Test double: a Hugging Face Hub stand-in (standard library only) serving local folders as pinned repositories.
"""The part of the Hub's HTTP API that huggingface_hub's snapshot_download and model_info use, over loopback.

    python hub.py --root DIR --port N [--drop-after BYTES [--drop-times K]] [--corrupt NAME] [--log FILE]

DIR/<owner>/<name>/ is a repository; its one revision is a 40-hex commit made from its files' digests
(written to DIR/<owner>/<name>.commit for the tests). Served:

  GET  /api/models/<repo>/revision/<rev>        repo info: sha, siblings (with size, blobId and, for
                                                LFS files, lfs.sha256; ?blobs=true as model_info asks)
  GET  /api/models/<repo>/tree/<rev>[/<path>]   the file list (recursive), as list_repo_tree pages it
  HEAD /<repo>/resolve/<rev>/<file>             X-Repo-Commit, ETag, X-Linked-Etag and X-Linked-Size
  GET  /<repo>/resolve/<rev>/<file>             the bytes, honouring Range (resumed downloads)

Knobs, to test what real hubs and networks do: --drop-after BYTES closes the connection after that many
bytes of the first K (--drop-times, default 1) GETs of each LFS file (an interrupted download; with K above
the client's retries, the download fails and leaves its partial file for the next run to resume); --corrupt NAME serves NAME with one byte
flipped while advertising the true sha256 (a corrupted transfer or mirror). Every request is logged as one
JSON line to --log (method, path, Range) so tests can see a resumed download.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

LFS_SUFFIXES = (".safetensors", ".bin", ".pt")


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class Repo:
    def __init__(self, path: str):
        self.path = path
        self.files = {}
        for base, _dirs, names in os.walk(path):
            for name in sorted(names):
                full = os.path.join(base, name)
                rel = os.path.relpath(full, path)
                data = open(full, "rb").read()
                lfs = rel.endswith(LFS_SUFFIXES)
                self.files[rel] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                                   "blob": git_blob_sha1(data), "lfs": lfs}
        digest = hashlib.sha1(json.dumps(self.files, sort_keys=True).encode()).hexdigest()
        self.commit = digest

    def siblings(self):
        out = []
        for rel, f in sorted(self.files.items()):
            entry = {"rfilename": rel, "size": f["size"], "blobId": f["blob"]}
            if f["lfs"]:
                entry["lfs"] = {"sha256": f["sha256"], "size": f["size"], "pointerSize": 134}
            out.append(entry)
        return out

    def tree(self):
        out = []
        for rel, f in sorted(self.files.items()):
            entry = {"type": "file", "oid": f["blob"], "size": f["size"], "path": rel}
            if f["lfs"]:
                entry["lfs"] = {"oid": f["sha256"], "size": f["size"], "pointerSize": 134}
            out.append(entry)
        return out


def make_handler(root, repos, drop_after, drop_times, corrupt, log):
    dropped = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # noqa: A002 - signature fixed by http.server
            pass

        def _log(self, status):
            if log:
                with lock, open(log, "a") as fh:
                    fh.write(json.dumps({"method": self.command, "path": self.path, "status": status,
                                         "range": self.headers.get("Range")}) + "\n")

        def _json(self, status, body):
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(raw)
            self._log(status)

        def _repo(self, owner, name):
            key = "%s/%s" % (owner, name)
            if key not in repos:
                repo_dir = os.path.join(root, owner, name)
                if not os.path.isdir(repo_dir):
                    return None
                repos[key] = Repo(repo_dir)
            return repos[key]

        def _not_found(self, what):
            self.send_response(404)
            self.send_header("X-Error-Code", "RepoNotFound" if "repo" in what else "EntryNotFound")
            self.send_header("X-Error-Message", what)
            self.send_header("Content-Length", "0")
            self.end_headers()
            self._log(404)

        def do_HEAD(self):  # noqa: N802
            self._route()

        def do_GET(self):  # noqa: N802
            self._route()

        def _route(self):
            parts = [unquote(p) for p in urlparse(self.path).path.split("/") if p]
            if len(parts) >= 6 and parts[:2] == ["api", "models"] and parts[4] in ("revision", "tree"):
                repo = self._repo(parts[2], parts[3])
                if repo is None or parts[5] not in (repo.commit, "main"):
                    return self._not_found("repo or revision not found")
                if parts[4] == "revision":
                    return self._json(200, {"id": "%s/%s" % (parts[2], parts[3]), "modelId": "%s/%s" % (parts[2], parts[3]),
                                            "sha": repo.commit, "siblings": repo.siblings(), "private": False})
                return self._json(200, repo.tree())
            if len(parts) >= 5 and parts[2] == "resolve":
                repo = self._repo(parts[0], parts[1])
                rel = "/".join(parts[4:])
                if repo is None or parts[3] not in (repo.commit, "main"):
                    return self._not_found("repo or revision not found")
                if rel not in repo.files:
                    return self._not_found("entry not found")
                return self._file(repo, rel)
            return self._not_found("no route for %s" % self.path)

        def _file(self, repo, rel):
            f = repo.files[rel]
            data = open(os.path.join(repo.path, rel), "rb").read()
            if rel == corrupt:
                data = data[:-1] + bytes([data[-1] ^ 0xFF])
            etag = f["sha256"] if f["lfs"] else f["blob"]
            start, status = 0, 200
            rng = self.headers.get("Range")
            if rng and rng.startswith("bytes="):
                start = int(rng[6:].split("-", 1)[0] or 0)
                status = 206
            body = data[start:]
            self.send_response(status)
            self.send_header("X-Repo-Commit", repo.commit)
            self.send_header("ETag", '"%s"' % etag)
            if f["lfs"]:
                self.send_header("X-Linked-Etag", '"%s"' % etag)
                self.send_header("X-Linked-Size", str(f["size"]))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            if status == 206:
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
            self.end_headers()
            self._log(status)
            if self.command == "HEAD":
                return
            key = (repo.commit, rel)
            if drop_after and f["lfs"] and dropped.get(key, 0) < drop_times and len(body) > drop_after:
                dropped[key] = dropped.get(key, 0) + 1
                self.wfile.write(body[:drop_after])
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)
                return
            self.wfile.write(body)

    return Handler


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--drop-after", type=int, default=0)
    ap.add_argument("--drop-times", type=int, default=1)
    ap.add_argument("--corrupt", default="")
    ap.add_argument("--log", default="")
    a = ap.parse_args(argv)
    repos = {}
    for owner in sorted(os.listdir(a.root)):
        for name in sorted(os.listdir(os.path.join(a.root, owner))) if os.path.isdir(os.path.join(a.root, owner)) else []:
            if os.path.isdir(os.path.join(a.root, owner, name)):
                repo = repos["%s/%s" % (owner, name)] = Repo(os.path.join(a.root, owner, name))
                with open(os.path.join(a.root, owner, name + ".commit"), "w") as fh:
                    fh.write(repo.commit + "\n")
    server = ThreadingHTTPServer(("127.0.0.1", a.port), make_handler(a.root, repos, a.drop_after, a.drop_times, a.corrupt, a.log))
    print("hub stand-in on http://127.0.0.1:%d serving %s" % (a.port, ", ".join(sorted(repos))), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
