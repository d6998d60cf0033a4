#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
module: settings_check
short_description: Refuse a role's bad settings in one task, from its rules and checks as data
version_added: 0.3.0
description:
  - Runs on the controller (an action plugin; nothing reaches the host). Each role's C(tasks/validate.yml) is this one
    task. It gets the problems its settings' types and rules already showed (the P(glm53.serving.setting_types#filter)
    and P(glm53.serving.setting_rules#filter) filters) and the role's checks of combinations (C(__<role>_checks) in
    the role's C(vars/main.yml), each a condition and the message that says what to set). It fails with every
    message at once, or records the role's settings as checked and prints its warnings.
  - A check is a mapping with C(ok) (true when the settings are good) and C(msg); with C(warn=true) a check that is
    not ok is a warning, said in the run's output, not a refusal.
  - With O(roles), it checks several roles in one task (C(playbooks/validate.yml) checks every role of the run so,
    before anything changes). Each role is evaluated in its own context, the variables one of its tasks sees (the
    shared C(_defaults) role's and its own defaults, under the inventory's and the play's values, under its
    C(vars/main.yml)), exactly as its C(tasks/validate.yml) would; the first role refused stops the task, so a bad
    value is named by the role that owns it. One task, not one per role per host, halves the controller's time.
options:
  role:
    description:
      - The role whose settings these are (its short name, C(serve)).
      - Required unless O(roles) is given.
    type: str
  roles:
    description:
      - The roles to check, each in its own context, in this order (the owners of values before the roles that
        derive from them). Given alone.
      - Records C(__glm53_validated_<role>) for each, so the roles' own entry points check again only what changed.
    type: list
    elements: str
  problems:
    description: Messages of the types and rules that failed; when there is any, the checks are not looked at.
    type: list
    elements: str
    default: []
  checks:
    description: The role's checks, each with C(ok), C(msg) and optionally C(warn).
    type: list
    elements: dict
    default: []
  fingerprint:
    description: A hash of the values checked, recorded in the fact C(__glm53_validated_<role>), so the role's own
      entry point checks again only what changed since.
    type: str
    default: ""
attributes:
  check_mode:
    description: Checks the same in check mode; it never changes anything.
    support: full
  diff_mode:
    description: Does not return a diff.
    support: none
  platform:
    description: Runs on the controller (an action plugin); nothing reaches the host.
    support: full
    platforms: all
author:
  - glm53.serving contributors (@glm53)
"""

EXAMPLES = r"""
- name: Check every role's settings of the run (playbooks/validate.yml)
  glm53.serving.settings_check:
    roles: [venv, flashinfer, vllm_fork, model, serve, service, preflight, probes]

- name: Refuse bad settings of this role (no changes)
  glm53.serving.settings_check:
    role: serve
    problems: "{{ __glm53_setting_problems }}"
    checks: "{{ [] if __glm53_setting_problems else __glm53_checks }}"
    fingerprint: "{{ __glm53_settings_fingerprint }}"
"""

RETURN = r"""
problems:
  description: The refusals (types and rules, or else the failed checks that are not warnings).
  returned: always
  type: list
  elements: str
role:
  description: With O(roles), the role that was refused.
  returned: failure with O(roles)
  type: str
checked:
  description: How many checks of combinations were evaluated.
  returned: always
  type: int
"""
