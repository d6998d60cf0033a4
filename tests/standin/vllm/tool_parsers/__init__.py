# Test double: the tool-call-parser registry of the fake vLLM engine (names as in vLLM 0.28.0).
from __future__ import annotations


class ToolParserManager:
    tool_parsers = {
        name: name
        for name in (
            "deepseek_v3", "deepseek_v31", "glm45", "glm47", "granite", "hermes", "hunyuan_a13b",
            "internlm", "jamba", "kimi_k2", "llama3_json", "llama4_json", "minimax", "minimax_m2",
            "mistral", "openai", "pythonic", "qwen3_coder", "qwen3_xml", "seed_oss", "step3", "xlam",
        )
    }

    @classmethod
    def get_tool_parser(cls, name: str):
        if name in cls.tool_parsers:
            return cls.tool_parsers[name]
        raise KeyError(f"tool helper: '{name}' not found in tool_parsers")
