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


def rewrite_header(shard, change):
    """Edit a shard's JSON header in place, keeping its length (padding with spaces) and its data."""
    import struct
    raw = shard.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    change(header)
    new = json.dumps(header, separators=(",", ":")).encode()
    assert len(new) <= n
    shard.write_bytes(raw[:8] + new + b" " * (n - len(new)) + raw[8 + n:])


def first_tensor(header):
    return next(k for k in header if k != "__metadata__")


@pytest.mark.parametrize("change,words", [
    (lambda h: h[first_tensor(h)].update(shape=[7]), "of I32 is 28 bytes, its data_offsets span"),
    (lambda h: h[first_tensor(h)].update(dtype="BF16"), "of BF16 is"),
    (lambda h: h[first_tensor(h)].update(dtype="Q4"), "unknown dtype 'Q4'"),
    (lambda h: h[first_tensor(h)].pop("shape"), "lacks dtype, shape or data_offsets"),
])
def test_a_header_that_breaks_the_format_rules_is_named(run_module, model, change, words):
    rewrite_header(model / SHARDS[1], change)
    r = run_module(model_verify, args(model, manifest_file=None))
    assert r.failed and SHARDS[1] in r["msg"] and words in r["msg"], r["msg"]


def test_overlapping_spans_are_named(run_module, model):
    def overlap(h):
        names = [k for k in h if k != "__metadata__"]
        a, b = h[names[0]], h[names[1]]
        # b claims a's bytes; the spans no longer tile the buffer
        b["data_offsets"] = [a["data_offsets"][0], a["data_offsets"][0] + (b["data_offsets"][1] - b["data_offsets"][0])]
    rewrite_header(model / SHARDS[0], overlap)
    r = run_module(model_verify, args(model, manifest_file=None))
    assert r.failed and "a hole or an overlap" in r["msg"], r["msg"]


def test_int8_awq_is_refused(run_module, model):
    cfg = json.loads((model / "config.json").read_text())
    cfg["quantization_config"]["bits"] = 8
    (model / "config.json").write_text(json.dumps(cfg))
    r = run_module(model_verify, args(model))
    assert r.failed and "quantization_config.bits is 8, expected 4" in r["msg"]


def test_a_malformed_index_names_its_file(run_module, model):
    (model / "model.safetensors.index.json").write_text('{"weight_map": {"a": ')
    r = run_module(model_verify, args(model))
    assert r.failed and "model.safetensors.index.json is not JSON" in r["msg"] and str(model) in r["msg"]
    (model / "model.safetensors.index.json").write_text('{"weight_map": ["x"]}')
    r = run_module(model_verify, args(model))
    assert r.failed and "has no weight_map of tensor names to shard file names" in r["msg"]


def test_a_file_replaced_with_cp_p_or_redated_is_hashed_again(run_module, model, tmp_path):
    import os
    import shutil
    assert not run_module(model_verify, args(model)).failed
    shard = model / SHARDS[2]
    # same size and mtime, other bytes: copied over with cp -p (a new inode)
    other = tmp_path / "other"
    data = bytearray(shard.read_bytes())
    data[-1] ^= 0xFF
    other.write_bytes(bytes(data))
    st = shard.stat()
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    shutil.copy2(other, tmp_path / "moved")
    os.replace(tmp_path / "moved", shard)
    r = run_module(model_verify, args(model))
    assert r.failed and r["hashed"] == 1 and "sha256" in r["corrupt"][0] and SHARDS[2] in r["corrupt"][0]
    # edited in place with its mtime put back (same inode, new ctime)
    shard3 = model / SHARDS[3]
    st = shard3.stat()
    with open(shard3, "r+b") as f:
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([last[0] ^ 0xFF]))
    os.utime(shard3, ns=(st.st_atime_ns, st.st_mtime_ns))
    r = run_module(model_verify, args(model))
    assert r.failed and any(SHARDS[3] in c for c in r["corrupt"])


def test_without_reference_digests_the_result_says_so(run_module, model):
    r = run_module(model_verify, args(model, manifest_file=None))
    assert not r.failed and r["checked"] == "sizes and headers only (no reference digests were given)"
    r = run_module(model_verify, args(model))
    assert r["checked"].startswith("sizes, headers and SHA-256")
