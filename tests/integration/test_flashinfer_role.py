"""The flashinfer role refuses the known-broken 0.6.18 pip wheel before cloning or building anything."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig

from testlib import COLLECTIONS_ROOT

PLAYBOOK = os.path.join(os.path.dirname(__file__), "flashinfer", "playbook.yml")


def venv_with_wheel_install(tmp_path, version, build_meta=None):
    """A venv holding what `pip install flashinfer-python==<version>` leaves: dist-info and the package."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})["purelib"]
    info = os.path.join(purelib, "flashinfer_python-%s.dist-info" % version)
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: flashinfer-python\nVersion: %s\n" % version)
    os.makedirs(os.path.join(purelib, "flashinfer"))
    open(os.path.join(purelib, "flashinfer", "__init__.py"), "w").close()
    if build_meta:
        with open(os.path.join(purelib, "flashinfer", "_build_meta.py"), "w") as f:
            f.write(build_meta)
    return venv


def run_role(tmp_path, venv):
    extra = {"ansible_python_interpreter": sys.executable, "venv_path": str(venv),
             "flashinfer_src_dir": str(tmp_path / "src"), "flashinfer_repo_url": str(tmp_path / "no-such-repo")}
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS_ROOT, "ANSIBLE_NOCOLOR": "1"}
    return subprocess.run(["ansible-playbook", "-i", "localhost,", PLAYBOOK, "-e", json.dumps(extra)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)


def test_broken_wheel_is_refused_before_anything_else(tmp_path):
    proc = run_role(tmp_path, venv_with_wheel_install(tmp_path, "0.6.18"))
    assert proc.returncode != 0
    assert "flashinfer-python 0.6.18 is installed" in proc.stdout and "from a pip" in proc.stdout
    assert "pip uninstall -y flashinfer-python" in proc.stdout
    assert not (tmp_path / "src").exists(), "the role cloned after refusing"


def test_a_source_build_of_0618_is_not_refused(tmp_path):
    meta = "__version__ = '0.6.18'\n__git_version__ = '%s'\n" % ("a" * 40)
    proc = run_role(tmp_path, venv_with_wheel_install(tmp_path, "0.6.18", meta))
    # it gets past the refusal and fails later, at the clone of the (absent) repository
    assert "is installed in" not in proc.stdout
    assert "Clone FlashInfer at the pinned ref" in proc.stdout and proc.returncode != 0
