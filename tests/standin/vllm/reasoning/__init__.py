# Test double: the reasoning-parser registry of the fake vLLM engine (names as in vLLM 0.28.0).
from __future__ import annotations


class ReasoningParserManager:
    reasoning_parsers = {
        name: name
        for name in (
            "deepseek_r1", "deepseek_v3", "ernie45", "glm45", "glm47", "gptoss", "granite",
            "hunyuan_a13b", "kimi_k2", "minimax_m2", "minimax_m2_append_think", "mistral",
            "olmo3", "qwen3", "seed_oss", "step3",
        )
    }

    @classmethod
    def get_reasoning_parser(cls, name: str):
        if name in cls.reasoning_parsers:
            return cls.reasoning_parsers[name]
        raise KeyError(f"reasoning helper: '{name}' not found in reasoning_parsers")
