"""The second round of input rules, at the filter level: whole-value matching with ASCII digits, system folders,
environment names and single lines (setting_problems); misspelt role settings (unknown_settings); TLS files read
and matched on the controller (tls_problems)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.glm53.serving.plugins.filter.setting_problems import setting_problems
from ansible_collections.glm53.serving.plugins.filter.tls_problems import tls_problems
from ansible_collections.glm53.serving.plugins.filter.unknown_settings import known_settings, unknown_settings
from testlib import REPO


def one(value, rule, **extra):
    return setting_problems([dict(name="x", value=value, rule=rule, **extra)])


@pytest.mark.parametrize("value,rule", [
    ("8001\n", "port"), ("\uff18\uff10\uff10\uff11", "port"), ("\u0668\u0660", "port"),
    ("\uff10.9", "fraction"), ("0.9\n", "fraction"), ("abcdef1\n", "hex_commit"), (1234567, "hex_commit"),
    ("http://127.0.0.1:8000\n", "url"), ("2\n", "serial"), ("\uff12", "serial"), ("/opt/x\n", "abs_path"),
    ("/opt/x\x1b", "abs_path"), ("/", "own_dir"), ("/etc/", "own_dir"), ("//usr", "own_dir"), ("/var/log", "own_dir"),
    ("/root", "own_dir"), ("X Y", "env_name"), ("1X", "env_name"), ("X=1;rm", "env_name"), ("a\nb", "single_line"),
    ("a\rb", "single_line"), ("a\u2028b", "single_line"), (True, "single_line"), ({"k": 1}, "single_line"),
    ("-1", "count_or_pct"), ("150%", "count_or_pct"), ("12.5%", "count_or_pct"), (True, "count_or_pct"), ("x", "count_or_pct"),
    # spaces around a port reach the URLs made from it; a folder with a space splits ReadWritePaths=; names past what
    # a file system takes
    (" 8001 ", "port"), ("8001 ", "port"), ("/srv/my data", "own_dir"), ("/opt/" + "a" * 256, "abs_path"),
    ("/opt" + "/abcdefgh" * 460, "own_dir"),
])
def test_refused(value, rule):
    assert len(one(value, rule)) == 1


@pytest.mark.parametrize("value,rule", [
    ("8001", "port"), (8001, "port"), ("0.90", "fraction"), ("1e-1", "fraction"),
    ("f2935ce322", "hex_commit"), ("http://[::1]:8000/x", "url"), ("http://h.example:8000", "url"), ("25%", "serial"),
    ("/opt/glm53/tls", "own_dir"), ("/etc/glm53", "own_dir"), ("/srv/models/GLM", "own_dir"), ("_X1", "env_name"),
    ("CUDA_VISIBLE_DEVICES", "env_name"), ("WARN", "single_line"), (8, "single_line"), ("a 'quoted' b", "single_line"),
    (0, "count_or_pct"), ("2", "count_or_pct"), ("0%", "count_or_pct"), ("50%", "count_or_pct"), ("100%", "count_or_pct"),
])
def test_accepted(value, rule):
    assert one(value, rule) == []


def test_an_all_digit_commit_is_told_to_be_quoted():
    (msg,) = one(1234567890, "hex_commit")
    assert "was read as a number" in msg and "Quote it" in msg


def test_mapping_keys_are_checked_with_keys_true():
    out = setting_problems([{"name": "venv_extra_env", "values": {"GOOD": "1", "BAD KEY": "1"}, "keys": True,
                             "rule": "env_name"}])
    assert out == [out[0]] and out[0].startswith('a key of venv_extra_env="BAD KEY"')


def test_misspelt_settings_are_named_with_the_closest_known_names():
    out = unknown_settings(["serve_prot", "serve_port", "rollout_serial", "service_ready", "lb_host", "my_var",
                            "venv_runtime_env"])
    assert len(out) == 1 and out[0].startswith("serve_prot is not a setting of any glm53.serving role (did you mean "
                                               "serve_port")
    known = known_settings()
    # every role default is a known name (argument specs), and so is what the roles set for later tasks
    assert {"serve_port", "service_ready", "venv_runtime_env", "rollout_hosts", "rollout_max_fail_percentage"} <= known


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    subprocess.run([sys.executable, os.path.join(REPO, "tests", "helpers", "make_tls.py"), str(d)], check=True,
                   capture_output=True)
    return d


def test_good_tls_files_pass(pki):
    assert tls_problems(str(pki / "server.crt"), str(pki / "server.key"), ca=str(pki / "ca.crt"),
                        names=["127.0.0.1", "localhost"]) == []


@pytest.mark.parametrize("cert,key,ca,names,words", [
    ("/etc/hostname", "server.key", "", [], "is not a PEM certificate"),
    ("server.crt", "/etc/hostname", "", [], "is not a PEM private key"),
    ("server.crt", "other.key", "", [], "is not the key of serve_ssl_certfile_src"),
    ("expired.crt", "server.key", "", [], "expired on"),
    ("other-name.crt", "server.key", "", ["127.0.0.1"], "does not name 127.0.0.1 (subjectAltName: other.example)"),
    ("server.crt", "server.key", "", ["gpu-node-01.example"], "does not name gpu-node-01.example"),
    ("server.crt", "server.key", "wrong-ca.crt", [], "did not sign serve_ssl_certfile_src"),
    ("weak.crt", "weak.key", "ca.crt", [], "has a 1024-bit RSA key"),
    ("client-only.crt", "server.key", "ca.crt", [], "its extended key usage (clientAuth) has no serverAuth"),
])
def test_bad_tls_files_are_named(pki, cert, key, ca, names, words):
    def path(name):
        return name if name.startswith("/") or not name else str(pki / name)
    out = tls_problems(path(cert), path(key), ca=path(ca), names=names)
    assert len(out) == 1 and words in out[0], out
