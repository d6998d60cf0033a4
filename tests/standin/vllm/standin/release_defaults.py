# Test double: what this build of the stand-in does when VLLM_STANDIN_BEHAVIOUR is not set. The fixture fork
# (tests/helpers/make_fixture_repos.py) has a commit that sets it to a broken behaviour, so an upgrade to that
# commit installs an engine that starts but answers garbage, as a bad real build would.
BEHAVIOUR = None
