"""glm53.serving.model_verify on checkpoints made by tests/helpers/make_model.py."""
from __future__ import annotations

import json
import pytest

from ansible_collections.glm53.serving.plugins.modules import model_verify

from make_model import make_model

SHARDS = ["model-%05d-of-00004.safetensors" % i for i in range(1, 5)]


@pytest.fixture
def model(tmp_path):
    d = tmp_path / "GLM"
    make_model(str(d), shards=4, shard_mib=0.25)
    return d


def args(model, **extra):
    out = {"path": str(model), "manifest_file": str(model) + ".sha256",
           "cache_file": str(model.parent / "cache.json"), **extra}
    return {k: v for k, v in out.items() if v is not None}


def test_sound_model_passes_then_uses_the_cache(run_module, model):
    first = run_module(model_verify, args(model))
    assert not first.failed, first["msg"] if first.failed else ""
    assert first["changed"] is False and first["shards"] == SHARDS
    assert first["hashed"] == 4 and first["cache_hits"] == 0
    assert first["config"]["quant_method"] == "awq" and first["config"]["architectures"] == ["Glm5NextForCausalLM"]
    second = run_module(model_verify, args(model))
    assert second["hashed"] == 0 and second["cache_hits"] == 4


def test_truncated_shard_is_named(run_module, model):
    shard = model / SHARDS[2]
    size = shard.stat().st_size
    with open(shard, "r+b") as f:
        f.truncate(size - 1000)
    r = run_module(model_verify, args(model))
    assert r.failed and r["truncated"] == ["%s: %d bytes, its header says %d" % (SHARDS[2], size - 1000, size)]
    assert SHARDS[2] in r["msg"] and "truncated shards" in r["msg"]


def test_missing_shard_is_named(run_module, model):
    (model / SHARDS[1]).unlink()
    r = run_module(model_verify, args(model))
    assert r.failed and r["missing"] == [SHARDS[1]] and "missing shards: " + SHARDS[1] in r["msg"]


def test_flipped_byte_is_caught_by_the_checksum_even_after_caching(run_module, model):
    assert not run_module(model_verify, args(model)).failed
    shard = model / SHARDS[3]
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    shard.write_bytes(bytes(data))  # same size, new mtime: the cache must not hide it
    r = run_module(model_verify, args(model))
    assert r.failed and len(r["corrupt"]) == 1 and r["corrupt"][0].startswith(SHARDS[3] + ": sha256 ")
    assert r["hashed"] == 1 and r["cache_hits"] == 3


def test_wrong_quantization_and_architecture(run_module, model):
    cfg = json.loads((model / "config.json").read_text())
    cfg["quantization_config"]["quant_method"] = "gptq"
    cfg["architectures"] = ["Glm4MoeForCausalLM"]
    (model / "config.json").write_text(json.dumps(cfg))
    r = run_module(model_verify, args(model))
    assert r.failed
    assert any("quant_method is 'gptq', expected 'awq'" in p for p in r["problems"])
    assert any("do not include Glm5NextForCausalLM" in p for p in r["problems"])


def test_shard_missing_a_tensor_from_the_index(run_module, model):
    index = json.loads((model / "model.safetensors.index.json").read_text())
    index["weight_map"]["model.layers.9.extra"] = SHARDS[0]
    (model / "model.safetensors.index.json").write_text(json.dumps(index))
    r = run_module(model_verify, args(model, manifest_file=None))
    assert r.failed and "lacks 1 tensor(s)" in r["corrupt"][0]


def test_check_mode_writes_no_cache(run_module, model):
    r = run_module(model_verify, args(model), check_mode=True)
    assert not r.failed and r["hashed"] == 4
    assert not (model.parent / "cache.json").exists()


def test_manifest_without_entry_is_a_problem(run_module, model):
    r = run_module(model_verify, args(model, manifest_file=None, manifest={SHARDS[0]: "0" * 64}))
    assert r.failed and any("no entry for" in p for p in r["problems"])
    assert any(SHARDS[0] in c for c in r["corrupt"])


def test_not_a_model_dir(run_module, tmp_path):
    r = run_module(model_verify, {"path": str(tmp_path), "cache_file": str(tmp_path / "c.json")})
    assert r.failed and "neither model.safetensors.index.json nor model.safetensors" in r["msg"]
