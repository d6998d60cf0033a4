# Test double: what this build of the stand-in does when VLLM_STANDIN_BEHAVIOUR is not set. The fixture fork
# (tests/helpers/make_fixture_repos.py) has a commit that sets it to a broken behaviour, so an upgrade to that
# commit installs an engine that starts but answers garbage, as a bad real build would.
BEHAVIOUR = None
# Each token's emulated decode time (VLLM_STANDIN_DECODE_S_PER_TOKEN) is multiplied by this. The fixture fork has a
# commit that sets it to 4/3: a correct build that decodes 25 % fewer tokens a second (the performance gate's story).
DECODE_SCALE = 1.0
# What the prompt logprobs say (VLLM_STANDIN_NUMERICS when it is not set): good, poisoned or drifted. The fixture fork
# has a commit that sets it to drifted: an engine that writes fluent text but whose numerics moved (the quality gate's
# story).
NUMERICS = None
