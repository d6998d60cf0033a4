"""hack/fleet_scale.py: which hosts each run takes, the per-host inventory (every path the collection writes on a
host is the host's own), and the table and scaling lines it prints."""
import importlib.util

import pytest
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("fleet_scale", REPO / "hack" / "fleet_scale.py")
fleet_scale = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fleet_scale)


def test_upgrades_take_hosts_not_upgraded_yet_then_start_again_with_the_next_target():
    runs = [(10, 5), (50, 20), (100, 50)]
    assert fleet_scale.slices(runs, "verify", 100) == [(10, 5, 0, None), (50, 20, 0, None), (100, 50, 0, None)]
    assert fleet_scale.slices(runs, "upgrade", 100) == [
        (10, 5, 0, "sm89-longctx-fix-v2"), (50, 20, 10, "sm89-longctx-fix-v2"), (100, 50, 0, "slow-release")]


def test_every_host_writes_under_its_own_folder_and_listens_on_its_own_port(tmp_path, monkeypatch):
    monkeypatch.setattr(fleet_scale, "ensure_user", lambda name, home: None)
    commits = {"minimum": "a" * 40, "mhc": "b" * 40, "longctx": "c" * 40}
    inv = fleet_scale.inventory(str(tmp_path), str(tmp_path / "fleet"), 3, commits, "/usr/bin/python3")
    group = inv["all"]["children"]["glm53_serving"]
    hosts = group["hosts"]
    assert sorted(hosts) == ["h001", "h002", "h003"]
    assert [h["serve_port"] for h in hosts.values()] == [20001, 20002, 20003]
    for name, hv in hosts.items():
        base = str(tmp_path / "fleet" / name)
        paths = [v for k, v in hv.items() if isinstance(v, str) and v.startswith("/")]
        assert paths and all(p.startswith(base + "/") for p in paths), (name, paths)
        assert hv["venv_service_user"] == "glm53-" + name and hv["service_name"] == "vllm-glm53-" + name
    assert group["vars"]["vllm_fork_build_mode"] == "wheel" and group["vars"]["rollout_bench"] is False


def test_a_root_it_did_not_make_is_refused_and_nothing_under_it_removed(tmp_path, monkeypatch):
    (tmp_path / "theirs.txt").write_text("keep\n")
    monkeypatch.setattr("sys.argv", ["fleet_scale.py", "--teardown", "--root", str(tmp_path)])
    with pytest.raises(SystemExit) as exc:
        fleet_scale.main()
    assert "was not made by this script" in str(exc.value)
    assert (tmp_path / "theirs.txt").read_text() == "keep\n"


def test_the_table_and_the_per_host_ratio_at_the_largest_n_against_the_smallest():
    results = [dict(n=n, forks=f, playbook="verify", settings=fleet_scale.DEFAULT_LABEL, rc=0, wall_s=w, cpu_s=c, peak_rss_mib=m,
                    tasks=34) for n, f, w, c, m in [(10, 5, 11.0, 42.0, 300), (100, 50, 41.0, 420.0, 4700)]]
    results.insert(0, dict(results[0], n=50, settings="pipelining off", wall_s=40.0))  # even when it came first
    results.append(dict(results[1], settings="Mitogen", playbook="upgrade", wall_s=30.0))
    results.append(dict(results[2], settings="Mitogen", playbook="upgrade", wall_s=150.0))
    # a quicker setup's split site.yml runs (the builder alone, then the rest at once) are rows, never a ratio
    setup = "setup: h001, then 8 runs at once"
    results += [dict(results[1], n=1, forks=1, playbook="site", settings=setup, wall_s=87.4),
                dict(results[1], n=99, forks=6, playbook="site", settings=setup, wall_s=419.5)]
    table = fleet_scale.table(results)
    assert "| 100 | 50 | verify | %s | 0 | 41.0 | 0.41 | 420.0 | 4.20 | 4700 | 34 |" % fleet_scale.DEFAULT_LABEL in table
    assert "| 99 | 6 | site | %s | 0 | 419.5 |" % setup in table
    # one ratio per playbook and settings label, the defaults first; a label run at one N only is in the table only
    assert fleet_scale.scaling(results) == (
        "verify, %s: per-host wall at N=100 is 0.37x that at N=10 (0.41 s against 1.10 s)\n"
        "upgrade, Mitogen: per-host wall at N=100 is 0.50x that at N=10 (1.50 s against 3.00 s)"
        % fleet_scale.DEFAULT_LABEL)
