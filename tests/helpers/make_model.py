# Test helper: writes a small but well-formed safetensors checkpoint (shards, index, config, manifest).
"""python3 make_model.py DIR [--shards N] [--shard-mib M] [--manifest FILE]

Shards are real safetensors files (8-byte header length, JSON header with dtype/shape/data_offsets,
then the tensor bytes, random so every shard hashes differently); the index maps every tensor to its
shard and states total_size; config.json says Glm5NextForCausalLM / glm5_next / AWQ 4-bit; the manifest
is sha256sum output. The tokenizer files are what a client reads of a real model directory (vLLM's own
`vllm bench serve` loads them with transformers): a word-level tokenizer of 4,002 tokens, written as JSON. Standard library only, so it runs inside the test containers too.
"""
import argparse
import hashlib
import json
import os
import struct


def write_shard(path, tensors):
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, nbytes in tensors:
        header[name] = {"dtype": "I32", "shape": [nbytes // 4], "data_offsets": [offset, offset + nbytes]}
        blobs.append(nbytes)
        offset += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    h = hashlib.sha256()
    with open(path, "wb") as f:
        for chunk in (struct.pack("<Q", len(raw)), raw):
            f.write(chunk)
            h.update(chunk)
        for nbytes in blobs:
            left = nbytes
            while left:
                chunk = os.urandom(min(left, 1 << 20))
                f.write(chunk)
                h.update(chunk)
                left -= len(chunk)
    return h.hexdigest(), offset


def write_tokenizer(directory, words=4000):
    """tokenizer.json, tokenizer_config.json and chat_template.jinja, as transformers saves a fast word-level
    tokenizer (whitespace split, "<unk>" and "<eos>" special)."""
    special = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i, t in enumerate(("<unk>", "<eos>"))]
    vocab = {"<unk>": 0, "<eos>": 1}
    vocab.update(("w%d" % i, i + 2) for i in range(words))
    single = [{"Sequence": {"id": "A", "type_id": 0}}]
    tokenizer = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": special, "normalizer": None,
                 "pre_tokenizer": {"type": "WhitespaceSplit"},
                 "post_processor": {"type": "TemplateProcessing", "single": single,
                                    "pair": single + [{"Sequence": {"id": "B", "type_id": 1}}], "special_tokens": {}},
                 "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
                 "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}}
    with open(os.path.join(directory, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f)
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "<unk>", "eos_token": "<eos>",
                   "model_max_length": 1048576}, f, indent=1)
    with open(os.path.join(directory, "chat_template.jinja"), "w") as f:
        f.write("{% for m in messages %}{{ m['content'] }} {% endfor %}")


def make_model(directory, shards=4, shard_mib=1.0, manifest=None):
    os.makedirs(directory, exist_ok=True)
    weight_map, digests, total = {}, {}, 0
    per_tensor = max(4, int(shard_mib * 1024 * 1024) // 2 // 4 * 4)
    for i in range(1, shards + 1):
        name = "model-%05d-of-%05d.safetensors" % (i, shards)
        tensors = [("model.layers.%d.mlp.experts.w%d.qweight" % (i, j), per_tensor) for j in (1, 2)]
        digests[name], nbytes = write_shard(os.path.join(directory, name), tensors)
        total += nbytes
        weight_map.update((t, name) for t, _size in tensors)
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({"architectures": ["Glm5NextForCausalLM"], "model_type": "glm5_next",
                   "max_position_embeddings": 1048576,
                   "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128}}, f, indent=1)
    write_tokenizer(directory)
    manifest = manifest or os.path.join(directory + ".sha256")
    with open(manifest, "w") as f:
        f.writelines("%s  %s\n" % (d, n) for n, d in sorted(digests.items()))
    return digests


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("directory")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--shard-mib", type=float, default=1.0)
    ap.add_argument("--manifest")
    a = ap.parse_args()
    make_model(a.directory, a.shards, a.shard_mib, a.manifest)
