#!/usr/bin/env bash
# `make test`: everything, in order, on a fresh machine of this kind. Installs what it needs.
#   yamllint and shellcheck -> ansible-lint (production) -> ansible-test sanity -> pytest -> contract (real vLLM 0.28.0's
#   parser, cached venv) -> molecule scenarios
# Each stage runs even if an earlier one failed; the last line counts the stages.
# Knobs: STAGES="yamllint ansible-lint sanity pytest contract molecule" (subset), SCENARIOS="default ..."
# (default: every molecule/*/molecule.yml), and those of hack/lib.sh.
set -uo pipefail
T0=$(date +%s)
# shellcheck source=hack/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO" || exit 1

STAGES=${STAGES:-yamllint ansible-lint sanity pytest contract molecule}
passed=0 failed=0 failed_names=()

cleanup() {
  local rc=$?
  set +e
  step "teardown"
  stop_dockerd
  exit "$rc"
}
trap cleanup EXIT

# Each stage's time goes to $PROFILE/stages.tsv, each scenario's actions and plays to $PROFILE/molecule-*.tsv,
# pytest's counts to $PROFILE/*.xml; the summary prints them as one table (hack/profile_log.py).
PROFILE=$WORK/profile
rm -rf "$PROFILE" && mkdir -p "$PROFILE"

run_stage() {  # name command...
  local name=$1 t0 rc; shift
  step "stage: $name"
  t0=$(date +%s)
  "$@"; rc=$?
  printf '%s\t%s\n' "$name" "$(( $(date +%s) - t0 ))" >>"$PROFILE/stages.tsv"
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1)); echo "---- stage $name: passed"
  else
    failed=$((failed + 1)); failed_names+=("$name"); echo "---- stage $name: FAILED"
  fi
}

# Sanity runs on what users get: the tarball `ansible-galaxy collection build` makes, installed into a fresh
# path (ansible_collections/glm53/serving, as ansible-test requires) with its shipped tests/sanity ignore file.
# ansible-test's --venv mode bootstraps pip from ci-files.testing.ansible.com (unreachable
# here), so the sanity requirements go into a venv of their own with --local --requirements.
stage_sanity() {
  local ac=$WORK/ac dest=$WORK/ac/ansible_collections/glm53/serving svenv=$WORK/sanity-venv py ver tarball
  rm -rf "$ac" "$WORK/tarball" && mkdir -p "$ac" "$WORK/tarball"
  ansible-galaxy collection build --output-path "$WORK/tarball" . >/dev/null || return 1
  tarball=$(ls "$WORK"/tarball/glm53-serving-*.tar.gz)
  ansible-galaxy collection install --offline --force -p "$ac" "$tarball" >/dev/null || return 1
  echo "sanity on $(basename "$tarball") installed at $dest ($(find "$dest" -type f | wc -l) files)"
  if [ ! -x "$svenv/bin/ansible-test" ]; then
    py=$(find_python 12 99) || return 1
    "$py" -m venv "$svenv" && "$svenv/bin/pip" install -q --upgrade pip && "$svenv/bin/pip" install -q -c hack/constraints.txt "$CORE_PIN" || return 1
  fi
  ver=$("$svenv/bin/python" -c 'import ansible_test._internal.python_requirements as r, inspect, re; print(re.search(r"pip=.([0-9.]+).", inspect.getsource(r)).group(1))') || return 1
  mkdir -p "$HOME/.ansible/test/cache"
  cp hack/get_pip_bootstrap.py "$HOME/.ansible/test/cache/get_pip_${ver//./_}.py"
  (cd "$dest" && PATH="$svenv/bin:$PATH" "$svenv/bin/ansible-test" sanity --local --requirements --python 3.12 --color no)
}

# ansible-lint resolves glm53.serving.* through a collections path that holds this checkout.
stage_ansible_lint() {
  local root=$WORK/lint-collections
  mkdir -p "$root/ansible_collections/glm53" && ln -sfn "$REPO" "$root/ansible_collections/glm53/serving"
  ANSIBLE_COLLECTIONS_PATH="$root:$ANSIBLE_COLLECTIONS_PATH" ansible-lint --profile production
}

stage_contract() {
  local t0
  ensure_contract_venv || return 1
  t0=$(date +%s)
  python -m pytest -p no:cacheprovider -v --junitxml="$PROFILE/contract.xml" tests/contract || return 1
  echo "contract tests against vLLM 0.28.0: $(( $(date +%s) - t0 )) s"
}

stage_molecule() {
  local s ok=0 bad=0 scenarios
  scenarios=${SCENARIOS:-$(for f in molecule/*/molecule.yml; do basename "$(dirname "$f")"; done)}
  start_dockerd && ensure_images || return 1
  for s in $scenarios; do
    step "molecule test -s $s"
    if timeout "${SCENARIO_TIMEOUT:-1500}" molecule test -s "$s" 2>&1 | python3 hack/profile_log.py tee "$PROFILE/molecule-$s.tsv" "$s"
    then ok=$((ok + 1)); else bad=$((bad + 1)); fi
  done
  echo "molecule: $ok passed, $bad failed"
  [ "$bad" -eq 0 ]
}

ensure_apt
ensure_venv || exit 1
ensure_collections || exit 1

for stage in $STAGES; do
  case $stage in
    yamllint) run_stage yamllint yamllint -s . && run_stage shellcheck shellcheck -x hack/*.sh .ci/run roles/service/files/verify_unit.sh tests/gpu/*.sh \
                && run_stage changelog antsibull-changelog lint ;;
    ansible-lint) run_stage ansible-lint stage_ansible_lint ;;
    sanity) run_stage sanity stage_sanity ;;
    # --dist loadfile: a module's tests on one worker, so a module fixture (the bad-settings table's runs, the verdict
    # classes' engines) is built once, not once per worker. Not loadgroup: under pytest 9 xdist 3.8's group suffix
    # (item._nodeid) is lost, and every module fixture ran on both workers (measured: 394 s of setup twice).
    pytest) run_stage pytest python -m pytest -n 2 --dist loadfile --durations=15 -p no:cacheprovider \
              --junitxml="$PROFILE/pytest.xml" tests/unit tests/integration ;;
    contract) run_stage contract stage_contract ;;
    verdicts) run_stage verdicts python hack/verdict_corpus.py ;;
    molecule) run_stage molecule stage_molecule ;;
    *) echo "unknown stage $stage"; failed=$((failed + 1)) ;;
  esac
done

step "profile"
python3 hack/profile_log.py table "$PROFILE" || true
step "summary (wall $(( $(date +%s) - T0 )) s)${failed_names[*]:+; failed: ${failed_names[*]}}"
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
