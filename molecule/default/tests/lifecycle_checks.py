"""Checks shared by the default (systemd) and tmux scenarios' tests: the ten kill -9 cycles and the crash loop
(stories/kill9_relaunch.yml and stories/crash_loop.yml record what happened on the host)."""
import json
import statistics


def ten_kill9_cycles(host, log_text):
    record = json.loads(host.file("/root/relaunch.json").content_string)
    cycles = record["cycles"]
    assert len(cycles) == 10, cycles
    for c in cycles:
        assert c["residue_before"], "cycle %d: the killed engine held no psm_ blocks" % c["cycle"]
        assert c["residue_left"] == [], "cycle %d: %s survived the relaunch gate" % (c["cycle"], c["residue_left"])
        assert c["new_pid"] not in (0, c["old_pid"]) and c["chat_passed"], c
    for path in cycles[-1]["residue_before"]:
        assert not host.file(path).exists, "%s survived the relaunch gate" % path
    assert host.file("/dev/shm/psm_decoy0").exists, "the gate removed a block a live process holds"
    assert record["last"]["NRestarts"] - record["first"]["NRestarts"] == 10, (record["first"], record["last"])
    assert record["last"]["ActiveState"] == "active" and record["last"]["Result"] == "success", record["last"]
    assert "relaunch gate: removed stale " + cycles[0]["residue_before"][0] in log_text
    assert log_text.count("relaunch gate: kept /dev/shm/psm_decoy0: open or mapped by a live process") >= 10
    took = [c["kill_to_ready_s"] for c in cycles]
    print("%s: ten kill -9 cycles, kill to ready (chat probe passed): min %.1f s, median %.1f s, max %.1f s"
          % (record["mode"], min(took), statistics.median(took), max(took)))
    return record


def crash_loop(host):
    r = json.loads(host.file("/root/crash_loop.json").content_string)
    print("%s: crash loop: the readiness wait failed %.1f s after the supervisor gave up (it had waited %s s, "
          "of a %s s timeout); message: %s" % (r["mode"], r["gave_up_to_failure_s"], r["wait_s"], 900, r["msg"]))
    assert "Wait" in r["task"] and r["wait_s"] is not None, r["task"]
    assert any("Insufficient space in /dev/shm" in line for line in r["log_tail"]), r["log_tail"]
    assert any("relaunch gate: gave up: the engine died before it was ready 3 times in a row" in line
               for line in r["log_tail"]), r["log_tail"]
    # functional, not a timing target: within a few polls of giving up, not at the 900 s timeout
    assert 0 <= r["gave_up_to_failure_s"] < 60
    return r
