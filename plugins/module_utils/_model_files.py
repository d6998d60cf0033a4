# -*- coding: utf-8 -*-
# Copyright: glm53.serving contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Verify a safetensors checkpoint: shards present, sizes as their headers say, SHA-256 as a manifest says.

Private to glm53.serving; standard library only. Hashes run in threads (hashlib releases the GIL on
large reads) and are cached by (path, size, mtime_ns, inode, ctime_ns), so an unchanged model re-verifies in
seconds, and a file replaced with `cp -p` or edited with its mtime put back is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.glm53.serving.plugins.module_utils._atomic_file import write_text

INDEX_NAME = "model.safetensors.index.json"
SINGLE_NAME = "model.safetensors"
_READ = 8 * 1024 * 1024
_MAX_HEADER = 100 * 1024 * 1024


# Bytes per element of each safetensors dtype (the format's own table).
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4,
               "U16": 2, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1}


class ModelError(Exception):
    pass


def check_tensors(header):
    """The format's rules: each tensor's shape x dtype size is its data span, and the spans tile the buffer."""
    spans = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            start, end = int(info["data_offsets"][0]), int(info["data_offsets"][1])
            shape, dtype = list(info["shape"]), info["dtype"]
        except (KeyError, TypeError, IndexError, ValueError):
            raise ModelError("tensor %s lacks dtype, shape or data_offsets" % name)
        if dtype not in DTYPE_BYTES:
            raise ModelError("tensor %s has an unknown dtype %r" % (name, dtype))
        count = 1
        for dim in shape:
            if not isinstance(dim, int) or dim < 0:
                raise ModelError("tensor %s has a bad shape %s" % (name, shape))
            count *= dim
        if end - start != count * DTYPE_BYTES[dtype] or start < 0:
            raise ModelError("tensor %s: shape %s of %s is %d bytes, its data_offsets span %d" % (
                name, shape, dtype, count * DTYPE_BYTES[dtype], end - start))
        spans.append((start, end, name))
    position = 0
    for start, end, name in sorted(spans):
        if start != position:
            raise ModelError("tensor %s starts at byte %d, where %d was expected (a hole or an overlap in the data)"
                             % (name, start, position))
        position = end


def read_header(path):
    """Return (header dict, expected file size, tensor bytes) from a safetensors file's own header."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise ModelError("shorter than a safetensors header")
        (n,) = struct.unpack("<Q", raw)
        if n > _MAX_HEADER:
            raise ModelError("header length %d is implausible" % n)
        data = f.read(n)
        if len(data) < n:
            raise ModelError("header cut short (%d of %d bytes)" % (len(data), n))
    try:
        header = json.loads(data)
    except ValueError as exc:
        raise ModelError("header is not JSON: %s" % exc)
    end = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            end = max(end, int(info["data_offsets"][1]))
        except (KeyError, TypeError, IndexError, ValueError):
            raise ModelError("tensor %s has no data_offsets" % name)
    check_tensors(header)
    return header, 8 + n + end, end


def load_index(model_dir):
    """Return (weight_map or None, index metadata, shard names in order)."""
    index_path = os.path.join(model_dir, INDEX_NAME)
    if os.path.exists(index_path):
        try:
            with open(index_path) as f:
                index = json.load(f)
        except ValueError as exc:
            raise ModelError("%s is not JSON: %s" % (index_path, exc))
        if not isinstance(index, dict):
            raise ModelError("%s is not a JSON object" % index_path)
        weight_map = index.get("weight_map") or {}
        if not isinstance(weight_map, dict) or not weight_map \
                or not all(isinstance(v, str) and v and "/" not in v for v in weight_map.values()):
            raise ModelError("%s has no weight_map of tensor names to shard file names" % index_path)
        shards = sorted(set(weight_map.values()))
        return weight_map, index.get("metadata") or {}, shards
    if os.path.exists(os.path.join(model_dir, SINGLE_NAME)):
        return None, {}, [SINGLE_NAME]
    raise ModelError("neither %s nor %s is in %s" % (INDEX_NAME, SINGLE_NAME, model_dir))


def parse_manifest_text(text):
    """sha256sum output ('<hex>  <name>') or a JSON object {name: hex}."""
    text = text.strip()
    if text.startswith("{"):
        data = json.loads(text)
        return dict((k, str(v).lower()) for k, v in data.items())
    manifest = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([0-9a-fA-F]{64})\s+\*?(.+)$", line)
        if not m:
            raise ModelError("manifest line is not '<sha256>  <file>': %r" % line)
        manifest[os.path.basename(m.group(2))] = m.group(1).lower()
    return manifest


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            chunk = f.read(_READ)
            if not chunk:
                break
            h.update(chunk)
    return h.hexdigest()


def load_cache(path):
    try:
        with open(path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def save_cache(path, cache):
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    write_text(path, json.dumps(cache, indent=1, sort_keys=True))


def check_config(model_dir, architecture, model_type, quant_method, quant_bits=None):
    """Return (summary, problems) for config.json."""
    problems = []
    try:
        with open(os.path.join(model_dir, "config.json")) as f:
            config = json.load(f)
    except OSError:
        return {}, ["config.json is missing"]
    except ValueError as exc:
        return {}, ["config.json is not JSON: %s" % exc]
    text_config = config.get("text_config") or {}
    quant = config.get("quantization_config") or text_config.get("quantization_config") or {}
    summary = {
        "architectures": config.get("architectures") or [],
        "model_type": config.get("model_type") or text_config.get("model_type"),
        "quant_method": quant.get("quant_method"),
        "bits": quant.get("bits") or quant.get("w_bit"),
    }
    if architecture and architecture not in summary["architectures"]:
        problems.append("config.json architectures %s do not include %s" % (summary["architectures"], architecture))
    if model_type and summary["model_type"] != model_type:
        problems.append("config.json model_type is %r, expected %r" % (summary["model_type"], model_type))
    if quant_method and (summary["quant_method"] or "").lower() != quant_method.lower():
        problems.append("config.json quantization_config.quant_method is %r, expected %r (this profile serves the "
                        "AWQ INT4 checkpoint)" % (summary["quant_method"], quant_method))
    if quant_bits and summary["bits"] != quant_bits:
        problems.append("config.json quantization_config.bits is %r, expected %d (the card's checkpoint is INT%d)"
                        % (summary["bits"], quant_bits, quant_bits))
    return summary, problems


def cache_key(st):
    """What must stay the same for a cached digest to stand: a copy with `cp -p` changes the inode, an
    edit with its mtime put back changes the ctime."""
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino, "ctime_ns": st.st_ctime_ns}


def verify(model_dir, manifest=None, cache_path=None, workers=4, write_cache=True,
           architecture=None, model_type=None, quant_method=None, quant_bits=None):
    t0 = time.monotonic()
    result = {"missing": [], "truncated": [], "corrupt": [], "problems": [], "hashed": 0, "cache_hits": 0}
    if not os.path.isdir(model_dir):
        raise ModelError("%s is not a directory" % model_dir)
    result["config"], result["problems"] = check_config(model_dir, architecture, model_type, quant_method, quant_bits)
    weight_map, metadata, shards = load_index(model_dir)
    result["shards"] = shards
    total_tensor_bytes = 0
    present = []
    for name in shards:
        path = os.path.join(model_dir, name)
        if not os.path.isfile(path):
            result["missing"].append(name)
            continue
        size = os.path.getsize(path)
        try:
            header, expected, tensor_bytes = read_header(path)
        except ModelError as exc:
            result["truncated" if size < 8 + 2 else "corrupt"].append("%s: %s" % (name, exc))
            continue
        if size != expected:
            result["truncated" if size < expected else "corrupt"].append(
                "%s: %d bytes, its header says %d" % (name, size, expected))
            continue
        tensors = set(k for k in header if k != "__metadata__")
        if weight_map is not None:
            absent = sorted(t for t, f in weight_map.items() if f == name and t not in tensors)
            if absent:
                result["corrupt"].append("%s: lacks %d tensor(s) the index puts there, e.g. %s"
                                         % (name, len(absent), absent[0]))
                continue
        total_tensor_bytes += tensor_bytes
        present.append(name)
    declared = metadata.get("total_size")
    if declared is not None and not result["missing"] and not result["truncated"] and not result["corrupt"]:
        if int(declared) != total_tensor_bytes:
            result["problems"].append("%s says total_size %s, the shards hold %d bytes of tensors"
                                      % (INDEX_NAME, declared, total_tensor_bytes))
    result["total_bytes"] = sum(os.path.getsize(os.path.join(model_dir, n)) for n in present)

    if manifest:
        unknown = sorted(set(shards) - set(manifest))
        if unknown:
            result["problems"].append("the checksum manifest has no entry for %s" % ", ".join(unknown))
        cache = load_cache(cache_path) if cache_path else {}
        todo, digests = [], {}
        for name in present:
            if name not in manifest:
                continue
            path = os.path.realpath(os.path.join(model_dir, name))
            st = os.stat(path)
            hit = cache.get(path)
            if hit and all(hit.get(k) == v for k, v in cache_key(st).items()):
                digests[name] = hit["sha256"]
                result["cache_hits"] += 1
            else:
                todo.append((name, path, st))
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for (name, path, st), digest in zip(todo, pool.map(lambda item: sha256_file(item[1]), todo)):
                digests[name] = digest
                cache[path] = dict(cache_key(st), sha256=digest)
        result["hashed"] = len(todo)
        for name, digest in sorted(digests.items()):
            if digest != manifest[name].lower():
                result["corrupt"].append("%s: sha256 %s, the manifest says %s" % (name, digest, manifest[name]))
        if cache_path and write_cache and todo:
            save_cache(cache_path, cache)
    result["checked"] = ("sizes, headers and SHA-256 against the reference digests" if manifest
                         else "sizes and headers only (no reference digests were given)")
    result["elapsed_s"] = round(time.monotonic() - t0, 3)
    result["ok"] = not (result["missing"] or result["truncated"] or result["corrupt"] or result["problems"])
    return result
