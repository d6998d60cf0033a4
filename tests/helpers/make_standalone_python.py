"""Pack the CPython that runs this script into an archive in python-build-standalone's install_only layout, for the
molecule build scenario's uv route (venv_python_source=uv with venv_uv_python_archive_url).

Run it with the interpreter to pack (the test machine's own CPython 3.10, built by pyenv):

    python3.10 tests/helpers/make_standalone_python.py OUT_DIR

It copies the interpreter's prefix (less its tests, IDLE, Tk, site-packages and caches) under python/, sets the
RUNPATH of the interpreter, libpython and the extension modules relative to themselves with patchelf (pyenv's holds
its absolute prefix, which the target host does not have), and writes OUT_DIR/<archive>.tar.gz and OUT_DIR/python.json
(the version, the archive's name and sha256, and where it came from). A copy with no path back to the prefix is then
run from another folder, to prove it stands alone. The test says truthfully what it installs: this machine's CPython,
repackaged, not a python-build-standalone release.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile

SKIP = {"test", "idlelib", "tkinter", "turtledemo", "site-packages", "__pycache__", "pkgconfig"}


def _ignore(folder, names):
    out = {n for n in names if n in SKIP or n.startswith("_tkinter") or n.endswith((".pyc", ".a"))}
    if os.path.basename(folder) == "bin":  # scripts whose shebang names the prefix; uv needs only the interpreter
        out |= {n for n in names if not n.startswith("python")}
    return out


def _set_runpath(path, runpath, prefix):
    old = subprocess.run(["patchelf", "--print-rpath", path], capture_output=True, text=True, check=True).stdout.strip()
    if old and prefix in old:
        subprocess.run(["patchelf", "--set-rpath", runpath, path], check=True)


def main(out):
    prefix = os.path.realpath(sys.base_prefix)
    version = platform.python_version()
    minor = "%d.%d" % sys.version_info[:2]
    name = "cpython-%s-%s-unknown-linux-gnu-install_only.tar.gz" % (version, platform.machine())
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "python")
        os.mkdir(root)
        for part in ("bin", "lib", "include"):
            if os.path.isdir(os.path.join(prefix, part)):
                shutil.copytree(os.path.join(prefix, part), os.path.join(root, part), symlinks=True, ignore=_ignore)
        os.makedirs(os.path.join(root, "lib", "python" + minor, "site-packages"), exist_ok=True)
        _set_runpath(os.path.join(root, "bin", "python" + minor), "$ORIGIN/../lib", prefix)
        for lib in glob.glob(os.path.join(root, "lib", "libpython*.so*")):
            if not os.path.islink(lib):
                _set_runpath(lib, "$ORIGIN", prefix)
        for ext in glob.glob(os.path.join(root, "lib", "python" + minor, "lib-dynload", "*.so")):
            _set_runpath(ext, "$ORIGIN/../..", prefix)
        # it stands alone: run from another folder, it finds its own library and modules, and can make a venv
        moved = os.path.join(tmp, "moved")
        shutil.copytree(root, moved, symlinks=True)
        probe = ("import sys, ssl, sqlite3, ctypes, venv, ensurepip; "
                 "assert sys.prefix == %r, sys.prefix; print(sys.version.split()[0])" % moved)
        ran = subprocess.run([os.path.join(moved, "bin", "python" + minor), "-I", "-c", probe],
                             capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, check=False)
        if ran.returncode != 0 or ran.stdout.strip() != version:
            sys.exit("the repackaged CPython does not stand alone: %s" % (ran.stderr.strip() or ran.stdout))
        archive = os.path.join(out, name)
        with tarfile.open(archive + ".tmp", "w:gz", compresslevel=1) as tar:
            tar.add(root, arcname="python")
        os.replace(archive + ".tmp", archive)
    with open(archive, "rb") as fh:
        sha256 = hashlib.sha256(fh.read()).hexdigest()
    info = {"version": version, "file": name, "sha256": sha256,
            "source": "CPython %s of %s (%s), repackaged in python-build-standalone's install_only layout"
                      % (version, prefix, sysconfig.get_config_var("LDLIBRARY"))}
    with open(os.path.join(out, "python.json"), "w") as fh:
        json.dump(info, fh, indent=1)
        fh.write("\n")
    print("%s: %s (%d MiB, sha256 %s)" % (info["source"], name, os.path.getsize(archive) >> 20, sha256))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
