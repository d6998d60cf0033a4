#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gpu_info
short_description: Read the NVIDIA GPUs and the processes holding their memory
version_added: "0.1.0"
description:
  - Runs C(nvidia-smi --query-gpu=index,name,compute_cap,memory.total,memory.used,driver_version,pci.bus_id,uuid
    --format=csv,noheader,nounits) and C(nvidia-smi --query-compute-apps=...) and returns them as lists.
  - Fails with a clear message when C(nvidia-smi) is missing or cannot talk to the driver.
  - A host with the driver loaded but no GPU returns an empty list; deciding whether that is acceptable is
    the caller's job (the C(glm53.serving.preflight) role refuses it).
author:
  - glm53.serving contributors (@glm53)
options:
  nvidia_smi:
    description: Name or path of the C(nvidia-smi) binary.
    type: str
    default: nvidia-smi
  include_processes:
    description: Also list the compute processes holding GPU memory, with their user and command line.
    type: bool
    default: true
extends_documentation_fragment:
  - glm53.serving.info_module
notes:
  - Changes nothing on the host.
"""

EXAMPLES = r"""
- name: Read the GPUs
  glm53.serving.gpu_info:
  register: gpu

- name: Show the compute capability of GPU 0
  ansible.builtin.debug:
    msg: "{{ gpu.gpus[0].compute_capability }}"
"""

RETURN = r"""
gpus:
  description: One entry per GPU, in index order.
  returned: success
  type: list
  elements: dict
  sample:
    - index: 0
      name: NVIDIA L40S
      compute_capability: "8.9"
      memory_total_mib: 46068
      memory_used_mib: 0
      driver_version: "580.159.04"
      bus_id: "00000000:01:00.0"
      uuid: GPU-cefa5aa9-751a-930f-d627-1da6b685ff14
gpu_count:
  description: Number of GPUs.
  returned: success
  type: int
  sample: 8
driver_version:
  description: Driver version of the first GPU (all GPUs share the driver), or null without GPUs.
  returned: success
  type: str
  sample: "580.159.04"
compute_capabilities:
  description: The distinct compute capabilities present.
  returned: success
  type: list
  elements: str
  sample: ["8.9"]
processes:
  description: Compute processes holding GPU memory (empty when O(include_processes=false)).
  returned: success
  type: list
  elements: dict
  sample:
    - pid: 4242
      process_name: /opt/glm53/venv/bin/python3
      used_memory_mib: 34000
      gpu_index: 0
      gpu_uuid: GPU-cefa5aa9-751a-930f-d627-1da6b685ff14
      bus_id: "00000000:01:00.0"
      user: glm53
      cmdline: /opt/glm53/venv/bin/python3 /opt/glm53/venv/bin/vllm serve ...
nvidia_smi:
  description: The path of the C(nvidia-smi) that was run.
  returned: success
  type: str
  sample: /usr/bin/nvidia-smi
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._nvidia_smi import (
    APP_QUERY_FIELDS,
    DRIVER_NOT_LOADED_HINT,
    GPU_QUERY_FIELDS,
    LOST_GPU_RE,
    NvidiaSmiParseError,
    UNKNOWN_FIELD_RE,
    lost_gpu_message,
    normalise_bus_id,
    old_driver_message,
    parse_apps,
    parse_gpus,
)


def _query(module, binary, query, fields):
    cmd = [binary, "--%s=%s" % (query, ",".join(fields)), "--format=csv,noheader,nounits"]
    rc, out, err = module.run_command(cmd)
    text = ("%s\n%s" % (out or "", err or "")).strip()
    lost = LOST_GPU_RE.findall(text)
    if lost:
        module.fail_json(msg=lost_gpu_message(lost), rc=rc, lost_gpus=[normalise_bus_id(b) for b in lost])
    if rc != 0:
        if "couldn't communicate with the NVIDIA driver" in text or rc == 9:
            module.fail_json(msg="%s (nvidia-smi exit %d: %s)" % (DRIVER_NOT_LOADED_HINT, rc, text), rc=rc)
        if "No devices were found" in text:
            return ""
        field = UNKNOWN_FIELD_RE.search(text)
        if field:
            module.fail_json(msg=old_driver_message(field.group(1)), rc=rc)
        module.fail_json(msg="`%s` failed with exit %d: %s" % (" ".join(cmd), rc, text), rc=rc)
    if "No devices were found" in out or "No running processes found" in out:
        return ""
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            include_processes=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    binary = module.get_bin_path(module.params["nvidia_smi"], opt_dirs=["/usr/bin", "/usr/local/bin"])
    if binary is None:
        module.fail_json(msg="nvidia-smi was not found (looked for %r on PATH). Install the NVIDIA driver (it ships "
                             "nvidia-smi), or point the nvidia_smi option at it." % module.params["nvidia_smi"])
    try:
        gpus = parse_gpus(_query(module, binary, "query-gpu", GPU_QUERY_FIELDS))
        processes = []
        if module.params["include_processes"]:
            processes = parse_apps(_query(module, binary, "query-compute-apps", APP_QUERY_FIELDS), gpus)
    except NvidiaSmiParseError as exc:
        module.fail_json(msg="could not parse the output of %s: %s" % (binary, exc))
    gpus.sort(key=lambda g: g["index"])
    module.exit_json(
        changed=False,
        gpus=gpus,
        gpu_count=len(gpus),
        driver_version=gpus[0]["driver_version"] if gpus else None,
        compute_capabilities=sorted(set(g["compute_capability"] for g in gpus if g["compute_capability"])),
        processes=processes,
        nvidia_smi=binary,
    )


if __name__ == "__main__":
    main()
