"""glm53.serving.port_owner_info on real sockets of this process."""
from __future__ import annotations

import getpass
import os
import socket

from ansible_collections.glm53.serving.plugins.modules import port_owner_info


def test_listening_socket_is_found_with_its_process():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        r = port_owner_info.owners(s.getsockname()[1])
    finally:
        s.close()
    assert r["listening"]
    (proc,) = r["processes"]
    assert proc["pid"] == os.getpid() and proc["user"] == getpass.getuser() and proc["state"] == "listen"


def test_bound_but_not_listening_is_not_seen():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))  # what vLLM does while it loads: not in /proc/net/tcp
    try:
        r = port_owner_info.owners(s.getsockname()[1])
    finally:
        s.close()
    assert not r["listening"] and r["processes"] == []


def test_free_port(run_module):
    from testlib import free_port
    r = run_module(port_owner_info, {"port": free_port()})
    assert r == {"changed": False, "listening": False, "processes": [], "foreign": []}


def test_the_engines_user_or_unit_is_not_foreign(run_module):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    port = s.getsockname()[1]
    try:
        anyone = run_module(port_owner_info, {"port": port})
        by_user = run_module(port_owner_info, {"port": port, "engine_user": getpass.getuser()})
        other = run_module(port_owner_info, {"port": port, "engine_user": "glm53-nobody", "engine_unit": "nothing.service"})
    finally:
        s.close()
    assert [p["pid"] for p in anyone["foreign"]] == [os.getpid()]
    assert by_user["foreign"] == [] and by_user["processes"] == anyone["processes"]
    assert [p["pid"] for p in other["foreign"]] == [os.getpid()]
    assert port_owner_info.foreign([{"user": "x", "unit": "vllm-glm53.service"}], "glm53", "vllm-glm53.service") == []
