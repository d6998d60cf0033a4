#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: model_verify
short_description: Prove that a safetensors checkpoint is complete, intact and the expected model
version_added: "0.1.0"
description:
  - Reads C(model.safetensors.index.json) (or a single C(model.safetensors)) and checks that every shard it
    names is present and exactly as long as its own safetensors header says (a truncated download is caught
    without hashing), that every tensor's shape times its dtype size equals its data span and the spans tile
    the data without holes or overlaps (the format's own rule), that each shard holds the tensors the index
    puts there, and that the index's C(total_size) matches. A malformed index is named by its path.
  - Checks C(config.json) for the expected architecture, model type, quantization method (AWQ) and bits (4).
  - With a checksum manifest, hashes every shard (SHA-256, in parallel) and compares. Digests are cached by
    (path, size, mtime, inode, ctime), so an unchanged model re-verifies in seconds and a replaced or
    re-dated file is hashed again. Without one, the result says it proved sizes and headers only.
  - Fails listing every missing, truncated or corrupt shard by name.
author:
  - glm53.serving contributors (@glm53)
options:
  path:
    description: The model directory.
    type: path
    required: true
  manifest:
    description: Expected SHA-256 per shard file name.
    type: dict
  manifest_file:
    description:
      - A file with the expected SHA-256 per shard, in C(sha256sum) format or as a JSON object.
    type: path
  architecture:
    description: An entry that C(architectures) in config.json must contain; empty to skip.
    type: str
    default: Glm5NextForCausalLM
  model_type:
    description: The C(model_type) config.json must have (top level or C(text_config)); empty to skip.
    type: str
    default: glm5_next
  quant_method:
    description: The C(quantization_config.quant_method) config.json must have; empty to skip.
    type: str
    default: awq
  quant_bits:
    description: The C(quantization_config.bits) config.json must have (the card's AWQ INT4 is 4); 0 to skip.
    type: int
    default: 4
  cache_file:
    description: Where digests are cached (only written outside check mode, and only when something was hashed).
    type: path
    default: /var/cache/glm53/model-verify.json
  workers:
    description: Shards hashed at once.
    type: int
    default: 4
extends_documentation_fragment:
  - glm53.serving.info_module
notes:
  - Never changes the model; the only file it writes is its digest cache, which is not reported as a change.
"""

EXAMPLES = r"""
- name: Verify the weights against the hub's checksums
  glm53.serving.model_verify:
    path: /srv/models/GLM-5.3-Flash-AWQ-INT4
    manifest_file: /srv/models/GLM-5.3-Flash-AWQ-INT4.sha256
"""

RETURN = r"""
shards:
  description: Shard file names the index names.
  returned: success
  type: list
  elements: str
  sample: [model-00001-of-00046.safetensors]
total_bytes:
  description: Bytes of the shards that were present and sound.
  returned: always
  type: int
  sample: 201863462912
missing:
  description: Shards named by the index but absent.
  returned: always
  type: list
  elements: str
  sample: [model-00007-of-00046.safetensors]
truncated:
  description: Shards shorter than their header says, with sizes.
  returned: always
  type: list
  elements: str
  sample: ["model-00003-of-00046.safetensors: 1048576 bytes, its header says 4980736000"]
corrupt:
  description: Shards whose header, tensors or SHA-256 are wrong, with the reason.
  returned: always
  type: list
  elements: str
  sample: ["model-00009-of-00046.safetensors: sha256 ab12..., the manifest says cd34..."]
problems:
  description: Other findings (config.json, index total_size, manifest gaps).
  returned: always
  type: list
  elements: str
  sample: ["config.json quantization_config.quant_method is 'gptq', expected 'awq'"]
config:
  description: What config.json says.
  returned: always
  type: dict
  sample: {architectures: [Glm5NextForCausalLM], model_type: glm5_next, quant_method: awq, bits: 4}
hashed:
  description: Shards hashed in this run.
  returned: always
  type: int
  sample: 46
cache_hits:
  description: Shards whose digest came from the cache.
  returned: always
  type: int
  sample: 0
checked:
  description: What was proved, saying so when no reference digests were given.
  returned: success
  type: str
  sample: sizes, headers and SHA-256 against the reference digests
elapsed_s:
  description: Seconds spent.
  returned: always
  type: float
  sample: 12.5
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.glm53.serving.plugins.module_utils._model_files import (
    ModelError,
    parse_manifest_text,
    verify,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            manifest=dict(type="dict"),
            manifest_file=dict(type="path"),
            architecture=dict(type="str", default="Glm5NextForCausalLM"),
            model_type=dict(type="str", default="glm5_next"),
            quant_method=dict(type="str", default="awq"),
            quant_bits=dict(type="int", default=4),
            cache_file=dict(type="path", default="/var/cache/glm53/model-verify.json"),
            workers=dict(type="int", default=4),
        ),
        mutually_exclusive=[("manifest", "manifest_file")],
        supports_check_mode=True,
    )
    p = module.params
    manifest = p["manifest"]
    try:
        if p["manifest_file"]:
            with open(p["manifest_file"]) as f:
                manifest = parse_manifest_text(f.read())
        result = verify(p["path"], manifest=manifest, cache_path=p["cache_file"], workers=p["workers"],
                        write_cache=not module.check_mode, architecture=p["architecture"],
                        model_type=p["model_type"], quant_method=p["quant_method"], quant_bits=p["quant_bits"])
    except (ModelError, OSError, ValueError) as exc:
        module.fail_json(msg="cannot verify the model in %s: %s" % (p["path"], exc))
    ok = result.pop("ok")
    if not ok:
        parts = []
        for key, label in (("missing", "missing shards"), ("truncated", "truncated shards"),
                           ("corrupt", "corrupt shards"), ("problems", "problems")):
            if result[key]:
                parts.append("%s: %s" % (label, "; ".join(result[key])))
        module.fail_json(msg="The model in %s is not sound. %s. Re-download the named files (the model role does "
                             "this with model_source=hub), or fix the path." % (p["path"], ". ".join(parts)),
                         **result)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
