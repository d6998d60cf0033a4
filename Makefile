# glm53.serving: the two commands from the README, and their parts.
.PHONY: test demo demo-clean lint sanity unit molecule help

help:
	@echo "make demo   converge site.yml onto a local systemd container with the stand-in engine"
	@echo "make test   yamllint, ansible-lint, ansible-test sanity, pytest, every molecule scenario"

test:
	bash hack/test.sh

demo:
	bash hack/demo.sh

demo-clean:
	bash hack/demo.sh --clean

lint:
	STAGES="yamllint ansible-lint" bash hack/test.sh

sanity:
	STAGES=sanity bash hack/test.sh

unit:
	STAGES=pytest bash hack/test.sh

molecule:
	STAGES=molecule bash hack/test.sh
