# glm53.serving: the two commands from the README, and their parts.
.PHONY: test demo demo-clean lint sanity shipped pytest contract molecule verdicts lock release help

help:
	@echo "make demo        converge site.yml onto a local systemd container with the stand-in engine"
	@echo "make demo-clean  remove the demo's container and files"
	@echo "make test        everything: yamllint, shellcheck, ansible-lint, sanity, pytest, contract, molecule"
	@echo "make lint        yamllint, shellcheck and ansible-lint (production profile)"
	@echo "make sanity      ansible-test sanity on ansible-core 2.21 and on 2.18 (the lowest supported)"
	@echo "make pytest      pytest: unit tests and the role tests run by ansible-playbook on this machine"
	@echo "make contract    the serve role and vllm_serve_args against the real vLLM 0.28.0 (CPU)"
	@echo "make molecule    every molecule scenario (SCENARIOS=\"default tmux\" or SCENARIO=fleet for some)"
	@echo "make shipped     the tarball as users and Galaxy meet it: antsibull-docs lint, ansible-lint, galaxy-importer, docs site"
	@echo "make release VERSION=x.y.z  changelog (antsibull-changelog), version in galaxy.yml, commit and annotated tag"
	@echo "make lock        re-resolve the tool venv's ranges into hack/constraints.txt (then review and make test)"
	@echo "make verdicts    the probe verdict corpus as a table (0 false passes, 0 false failures)"

test:
	bash hack/test.sh

demo:
	bash hack/demo.sh

demo-clean:
	bash hack/demo.sh --clean

lint:
	STAGES="yamllint ansible-lint" bash hack/test.sh

sanity:
	STAGES="sanity sanity-2.18" bash hack/test.sh

pytest:
	STAGES=pytest bash hack/test.sh

contract:
	STAGES=contract bash hack/test.sh

molecule:
	STAGES=molecule bash hack/test.sh

verdicts:
	STAGES=verdicts bash hack/test.sh

shipped:
	STAGES=shipped bash hack/test.sh

release:
	bash -c '. hack/lib.sh && ensure_venv >&2 && PATH="$$VENV/bin:$$PATH" bash hack/release.sh "$(VERSION)"'

lock:
	bash hack/lock.sh
