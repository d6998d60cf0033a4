# Test double: package marker of the fake vLLM engine.
