# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: heal_step
short_description: heal.yml's decision for one host, as a state machine driven by what the run finds
version_added: "0.4.0"
description:
  - Every decision C(heal.yml) takes about a host is this filter's, from a table of states and events; the heal
    role's task files only read the host, act on the state, and write it down.
  - "Events, in the order a run meets them. C(survey) (from no state) gives C(healthy) when the probes passed;
    C(marked) when an earlier heal left the host drained on the release it still serves and C(heal_clear) is off;
    C(gave_up) when the service manager gave up on the engine (systemd's unit C(failed), or a tmux pane titled
    C(glm53: gave up)); else C(failing). C(budget) (from C(failing)) gives C(held) when fewer hosts pass than
    C(heal_min_serving) asks of the pool, or, given a C(claim) (sliced runs' store, glm53.serving.fleet_claim's
    result), when the store refused the claim (the whole pool's budget is spent). C(turn_done) (from C(failing))
    gives C(healed). C(turn_failed) (from C(failing)) gives C(drained) when the engine was stopped (relaunched and failing again) and C(unhealed) when it
    was not (the drain or the stop failed, so the next run tries again). An event the table has no row for leaves
    the state as it is."
  - Each state carries what the role does with it (RV(_value.record), RV(_value.metric), RV(_value.needs_person)).
positional: _input, event
options:
  _input:
    description: The host's heal state so far (C({}) before the survey).
    type: dict
    required: true
  event:
    description: What happened (C(survey), C(budget), C(turn_done), C(turn_failed)).
    type: str
    required: true
    choices: [survey, budget, turn_done, turn_failed]
  probes_result:
    description: For C(survey), the probes role's C(probes_result).
    type: dict
  record:
    description: For C(survey), the host's heal record (C(heal_state_file)), C({}) when there is none.
    type: dict
  release:
    description: For C(survey), the release that serves.
    type: str
  clear:
    description: For C(survey), C(heal_clear) (a marked host is healed again).
    type: bool
    default: false
  service_mode:
    description: For C(survey), how the engine runs (C(systemd), C(tmux), C(none)).
    type: str
    default: systemd
  manager_lines:
    description:
      - For C(survey), what the service manager said of the engine. systemd, C(systemctl show -p ActiveState -p
        Result --value) (the first line is the state); tmux, the panes' titles.
    type: list
    elements: str
  detected:
    description: For C(survey), when the run started to look at the host (seconds since the epoch).
    type: float
  passing:
    description: For C(budget), how many hosts of the pool pass.
    type: int
  pool:
    description: For C(budget), how many hosts the pool has.
    type: int
  min_serving:
    description: For C(budget), C(heal_min_serving), a count or a percentage of the pool (rounded down).
    type: raw
  claim:
    description:
      - For C(budget), instead of the counts, what the store said of the host's claim (glm53.serving.fleet_claim's
        result, with C(claimed) and C(reason), or its failure's C(msg)); a refused or failed claim holds the host.
    type: dict
  steps:
    description: For C(turn_done) and C(turn_failed), the steps of the restart turn done (the rollout role's C(rollout_steps)).
    type: list
    elements: str
  seconds:
    description: For C(turn_done), from detection to re-admission.
    type: float
  error:
    description: For C(turn_failed), why the turn failed.
    type: str
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Note this host's state
  ansible.builtin.set_fact:
    heal: "{{ {} | glm53.serving.heal_step('survey', probes_result=probes_result, record={}, release='r1') }}"
"""

RETURN = r"""
_value:
  description: The host's state after the event.
  type: dict
  contains:
    state:
      description: C(healthy), C(marked), C(gave_up), C(failing), C(held), C(healed), C(drained) or C(unhealed).
      type: str
    reason:
      description: Why, in one line (empty for a healthy host).
      type: str
    marked:
      description: Whether an earlier heal's mark holds (set by C(survey)).
      type: bool
    record:
      description: Whether the state is written to the host's heal record.
      type: bool
    metric:
      description: The state C(glm53_heal_state) shows (C(serving), C(failing), C(drained), C(gave_up)).
      type: str
    needs_person:
      description: Whether the host fails the run until a person looks at it.
      type: bool
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean
from ansible_collections.glm53.serving.plugins.module_utils._heal_budget import minimum

# What each state means for the role: (the metric's state, written to the heal record, needs a person).
STATES = {
    "healthy": ("serving", False, False),
    "healed": ("serving", True, False),
    "failing": ("failing", False, False),   # to heal (a run that stops before its turn leaves it here)
    "held": ("failing", False, True),       # too few hosts pass: the failures likely share a cause
    "unhealed": ("failing", False, True),   # not relaunched: the next run tries again
    "drained": ("drained", True, True),     # relaunched and failing again: left out of the pool, marked
    "marked": ("drained", False, True),     # left drained by an earlier run, same release, not cleared
    "gave_up": ("gave_up", False, True),    # a crash loop: reported, never restarted blindly
}


def _gave_up(service_mode, lines):
    """Whether the service manager gave up on the engine (a crash loop)."""
    if service_mode == "systemd":
        return bool(lines) and lines[0].strip() == "failed"
    if service_mode == "tmux":
        return any(x.startswith("glm53: gave up") for x in lines)
    return False


def _survey(_heal, f):
    result = f.get("probes_result")
    if not isinstance(result, dict) or "passed" not in result:
        raise AnsibleFilterError("heal_step survey needs the probes role's probes_result (a mapping with passed)")
    record = f.get("record") or {}
    lines = [str(x) for x in f.get("manager_lines") or []]
    marked = (record.get("state") == "drained" and record.get("release") == f.get("release")
              and not boolean(f.get("clear", False), strict=False))
    out = {"marked": marked, "detected": f.get("detected")}
    if boolean(result["passed"], strict=False):
        return dict(out, state="healthy", reason="")
    if marked:
        return dict(out, state="marked", reason="left drained by heal.yml since %s: %s" % (
            record.get("since", "?"), record.get("reason", "?")))
    if _gave_up(f.get("service_mode", "systemd"), lines):
        why = "the service manager gave up on the engine (a crash loop; see its log): "
        return dict(out, state="gave_up", reason=why + " ".join(lines))
    return dict(out, state="failing", reason=" | ".join(str(x) for x in result.get("failures") or []))


def _budget(heal, f):
    if f.get("claim") is not None:
        claim = f["claim"]
        if boolean(claim.get("claimed", False), strict=False):
            return {"claimed": True}
        return {"state": "held", "reason": (
            "not healed: the pool's budget in the store (sliced runs) is spent, %s; it still fails: %s"
            % (claim.get("reason") or claim.get("msg") or "the claim was refused", heal.get("reason", "")))}
    passing, pool, least = int(f["passing"]), int(f["pool"]), minimum(f["min_serving"], f["pool"])
    if passing >= least:
        return {}
    return {"state": "held", "reason": (
        "not healed: %d of %d hosts pass, below heal_min_serving=%s (%d): so many failing hosts point to a cause a "
        "restart does not fix (a release, the model store, the network); it still fails: %s"
        % (passing, pool, f["min_serving"], least, heal.get("reason", "")))}


def _turn_done(_heal, f):
    return {"state": "healed", "steps": list(f.get("steps") or []), "seconds": f.get("seconds")}


def _turn_failed(heal, f):
    steps = list(f.get("steps") or [])
    error = str(f.get("error") or "the restart failed").strip()
    if "stopped" in steps:
        return {"state": "drained", "steps": steps, "first_reason": heal.get("reason"),
                "reason": "failed again after its relaunch: " + error}
    return {"state": "unhealed", "steps": steps, "first_reason": heal.get("reason"),
            "reason": "not relaunched (%s was the last step done): %s" % (steps[-1] if steps else "nothing", error)}


# (state before, event) -> what the event changes; a pair that is not here changes nothing.
TRANSITIONS = {
    (None, "survey"): _survey,
    ("failing", "budget"): _budget,
    ("failing", "turn_done"): _turn_done,
    ("failing", "turn_failed"): _turn_failed,
}


def heal_step(heal, event, **facts):
    if not isinstance(heal, dict):
        raise AnsibleFilterError("heal_step expects the host's heal state (a mapping, {} before the survey)")
    if event not in set(e for _s, e in TRANSITIONS):
        raise AnsibleFilterError("heal_step: unknown event %r (one of survey, budget, turn_done, turn_failed)" % event)
    state = heal.get("state")
    if event == "survey" and state is not None:
        raise AnsibleFilterError("heal_step: a host is surveyed once a run (it is %s already)" % state)
    step = TRANSITIONS.get((state, event))
    out = dict(heal, **step(heal, facts)) if step else dict(heal)
    metric, record, person = STATES[out["state"]]
    out.update(metric=metric, record=record, needs_person=person)
    return out


class FilterModule(object):
    def filters(self):
        return {"heal_step": heal_step}
