#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: installed_build_info
short_description: Read what a virtualenv has installed of a distribution, without importing it
version_added: "0.1.0"
description:
  - Runs a small probe in the venv's own interpreter and reports the distribution's version, whether it is an
    editable install, where its package is, and the commit it was built from (FlashInfer's C(_build_meta.py),
    or the C(+g<commit>) of a setuptools-scm version).
  - Never imports the package, so it works on hosts without CUDA (FlashInfer and vLLM fail to import there).
  - The proof the flashinfer role makes on every run; M(glm53.serving.vllm_fork_commit) uses the same probe.
author:
  - glm53.serving contributors (@glm53)
options:
  venv:
    description: The virtualenv.
    type: path
    required: true
  distribution:
    description: The distribution's name, as pip knows it.
    type: str
    required: true
  package:
    description: The import package's name.
    type: str
    required: true
extends_documentation_fragment:
  - glm53.serving.info_module
"""

EXAMPLES = r"""
- name: Read the installed FlashInfer
  glm53.serving.installed_build_info:
    venv: /opt/glm53/venv
    distribution: flashinfer-python
    package: flashinfer
  register: flashinfer_installed
"""

RETURN = r"""
installed:
  description: Whether the distribution is installed.
  returned: success
  type: bool
  sample: true
version:
  description: The distribution's version.
  returned: success
  type: str
  sample: 0.6.16.post3
editable:
  description: Whether it is an editable install (pip install -e).
  returned: success
  type: bool
  sample: true
commit:
  description: The commit it was built from, or null when it carries none.
  returned: success
  type: str
  sample: 3b6e0c2a91
location:
  description: The package's folder.
  returned: success
  type: str
  sample: /opt/glm53/src/flashinfer/flashinfer
file_version:
  description: The version in the package's C(_version.py), when it has one.
  returned: success
  type: str
  sample: 0.28.1rc1.dev6+gf2935ce32
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._installed import installed_build


def main():
    module = AnsibleModule(
        argument_spec=dict(venv=dict(type="path", required=True), distribution=dict(type="str", required=True),
                           package=dict(type="str", required=True)),
        supports_check_mode=True,
    )
    p = module.params
    info = installed_build(module, p["venv"], p["distribution"], p["package"])
    if info.pop("error", None) is not None and not module.check_mode:
        module.fail_json(msg="cannot read %s in %s: the venv is missing or broken (build it with the venv role)"
                             % (p["distribution"], p["venv"]), **info)
    module.exit_json(changed=False, **info)


if __name__ == "__main__":
    main()
