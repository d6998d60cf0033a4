#!/usr/bin/env bash
# `make test`: everything, on a fresh machine of this kind. Installs what it needs.
#   host lane:      yamllint and shellcheck -> ansible-lint (production) -> ansible-test sanity -> shipped (docs lint,
#                   docs site, ansible-lint and galaxy-importer on the tarball) -> pytest -> contract
#                   (real vLLM 0.28.0's parser, cached venv) -> quickstart (the README's quick start pasted into a
#                   fresh Debian 12 container, once dockerd is up) -> HOST_LANE_SCENARIOS (molecule build_once)
#   molecule lanes: the other molecule scenarios, dealt into MOLECULE_LANES, beside the host lane; the last lane
#                   ends with ansible-test sanity on the lowest supported ansible-core (sanity-2.18), and the
#                   scenarios of LOW_CORE_SCENARIOS (build) run with that ansible-core on Python 3.11
# Each stage runs even if an earlier one failed; the last lines are the time profile and the count of stages.
# Knobs: STAGES="yamllint ansible-lint sanity sanity-2.18 shipped pytest contract quickstart molecule" (subset),
# SCENARIOS="default ..." (default: every molecule/*/molecule.yml), LANES (3; 1 runs everything in turn),
# MOLECULE_LANES, and those of hack/lib.sh.
set -uo pipefail
T0=$(date +%s)
# shellcheck source=hack/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO" || exit 1

# One run at a time on a machine: runs share $WORK (the profile, the venvs, and the docker daemon a run starts and
# stops at its end), so a second run beside a first would wipe the first's logs and stop its daemon under it.
RUN_PID_FILE=$WORK/test.pid
mkdir -p "$WORK"
other=$(cat "$RUN_PID_FILE" 2>/dev/null)
if [ -n "$other" ] && [ "$other" != $$ ] && tr '\0' ' ' <"/proc/$other/cmdline" 2>/dev/null | grep -q 'hack/test\.sh'; then
  echo "hack/test.sh: another run (pid $other) is using $WORK; wait for it to end, or set GLM53_WORK to another folder" >&2
  exit 1
fi
echo $$ >"$RUN_PID_FILE"

STAGES=${STAGES:-yamllint ansible-lint sanity sanity-2.18 shipped pytest contract quickstart molecule}
# Lanes run side by side: the host lane (lint, sanity, pytest, contract, in STAGES order) and the molecule lanes,
# each a list of scenarios run in turn. A molecule scenario keeps about one core busy at its peak and much less while
# engines load and drain, so on two cores three lanes finish in about the time of the longest; LANES=1 runs every
# stage in turn, in one lane, as before. Each stage's output goes to its own log, printed whole when it ends.
LANES=${LANES:-3}
MOLECULE_LANES=${MOLECULE_LANES:-"fleet;default tmux build"}
# Scenarios the host lane runs after its stages (with LANES >= 3), once dockerd and the image are up: a short one,
# so the fleet lane, the longest, holds the fleet scenario alone.
HOST_LANE_SCENARIOS=${HOST_LANE_SCENARIOS:-build_once}

kill_tree() {  # pid...: each process and its descendants
  local p
  for p in "$@"; do
    # shellcheck disable=SC2046
    kill_tree $(ps -o pid= --ppid "$p" 2>/dev/null)
    kill "$p" 2>/dev/null
  done
}

cleanup() {
  local rc=$?
  set +e
  step "teardown"
  # shellcheck disable=SC2086
  [ -n "${LANE_PIDS:-}" ] && kill_tree $LANE_PIDS  # interrupted: stop the lanes before their daemon
  stop_dockerd
  rm -f "$RUN_PID_FILE"
  exit "$rc"
}
trap cleanup EXIT

# Each stage's time goes to $PROFILE/stages.tsv (name, seconds, exit status, lane, start offset), each scenario's
# actions and plays to $PROFILE/molecule-*.tsv, pytest's counts to $PROFILE/*.xml; the summary prints them as one
# table (hack/profile_log.py).
PROFILE=$WORK/profile
rm -rf "$PROFILE" && mkdir -p "$PROFILE/logs"

run_stage() {  # name command...  (in a lane: $LANE; the output to $PROFILE/logs/<name>.log, printed when it ends)
  local name=$1 t0 rc log="$PROFILE/logs/$1.log"; shift
  t0=$(date +%s)
  echo "==== [+$(( t0 - T0 ))s] stage $name started (lane ${LANE:-host})"
  "$@" >"$log" 2>&1 </dev/null; rc=$?
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$(( $(date +%s) - t0 ))" "$rc" "${LANE:-host}" "$(( t0 - T0 ))" >>"$PROFILE/stages.tsv"
  {
    flock 9
    step "stage: $name (lane ${LANE:-host}, $(( $(date +%s) - t0 )) s)"
    cat "$log"
    if [ "$rc" -eq 0 ]; then echo "---- stage $name: passed"; else echo "---- stage $name: FAILED (exit $rc)"; fi
  } 9>"$PROFILE/print.lock"
  return "$rc"
}

# Sanity runs on what users get: the tarball `ansible-galaxy collection build` makes, installed into a fresh
# path (ansible_collections/glm53/serving, as ansible-test requires) with its shipped tests/sanity ignore file.
# ansible-test's --venv mode bootstraps pip from ci-files.testing.ansible.com (unreachable
# here), so the sanity requirements go into a venv of their own with --local --requirements.
# stage_sanity [low]: on the highest supported ansible-core (2.21, Python 3.12), or with "low" on the lowest (2.18,
# Python 3.11: LOW_CORE_PIN), each in a sanity venv of its own and a collection path of its own.
stage_sanity() {
  local tag=${1:-high} ac dest svenv py ver tarball pin=$CORE_PIN lock=hack/constraints.txt want=12 top=99 pyver=3.12
  [ "$tag" = low ] && pin=$LOW_CORE_PIN lock=hack/constraints-low.txt want=11 top=11 pyver=3.11
  ac=$WORK/ac-$tag dest=$WORK/ac-$tag/ansible_collections/glm53/serving svenv=$WORK/sanity-venv-$tag
  rm -rf "$ac" "$WORK/tarball-$tag" && mkdir -p "$ac" "$WORK/tarball-$tag"
  ansible-galaxy collection build --output-path "$WORK/tarball-$tag" . >/dev/null || return 1
  tarball=$(ls "$WORK"/tarball-"$tag"/glm53-serving-*.tar.gz)
  ansible-galaxy collection install --offline --force -p "$ac" "$tarball" >/dev/null || return 1
  # The ignore file stays out of the tarball (galaxy.yml says why); sanity reads it from the checkout.
  mkdir -p "$dest/tests/sanity" && cp tests/sanity/ignore-*.txt "$dest/tests/sanity/"
  echo "sanity on $(basename "$tarball") installed at $dest ($(find "$dest" -type f | wc -l) files)"
  pinned_venv "$svenv" ansible-test "$want" "$top" "$lock" "sanity venv: $pin" "$pin" || return 1
  echo "$("$svenv/bin/ansible" --version | head -1) on $("$svenv/bin/python" -V)"
  ver=$("$svenv/bin/python" -c 'import ansible_test._internal.python_requirements as r, inspect, re; print(re.search(r"pip=.([0-9.]+).", inspect.getsource(r)).group(1))') || return 1
  mkdir -p "$HOME/.ansible/test/cache"
  cp hack/get_pip_bootstrap.py "$HOME/.ansible/test/cache/get_pip_${ver//./_}.py"
  (cd "$dest" && PATH="$svenv/bin:$PATH" "$svenv/bin/ansible-test" sanity --local --requirements --python "$pyver" --color no)
}

# ansible-lint resolves glm53.serving.* through a collections path that holds this checkout.
stage_ansible_lint() {
  local root=$WORK/lint-collections
  mkdir -p "$root/ansible_collections/glm53" && ln -sfn "$REPO" "$root/ansible_collections/glm53/serving"
  ANSIBLE_COLLECTIONS_PATH="$root:$ANSIBLE_COLLECTIONS_PATH" ansible-lint --profile production
}

# What ships, checked as a user and Galaxy meet it: the tarball installed into a fresh path, then
#   antsibull-docs lint-collection-docs (0 errors), ansible-lint --profile production in the installed copy (0),
#   galaxy-importer on the tarball (0 warnings; its ansible-test run is off: the sanity stage runs that), and the
#   docs site (antsibull-docs sphinx-init + sphinx-build), whose serve role page must hold its options table.
# The site is built offline: docs.ansible.com's intersphinx inventories cannot be fetched, so its labels that the
# generated site cites (common_return_values, ansible_configuration_settings, and action_plugins on the page of a
# module with an action plugin, settings_check) are the only warnings let through, each counted; any other warning
# fails the stage.
OFFLINE_SPHINX=(-e 'failed to reach any of the inventories' -e "undefined label: 'common_return_values'"
  -e "undefined label: 'ansible_configuration_settings'" -e "undefined label: 'action_plugins'")
stage_shipped() {
  local out=$WORK/shipped ac dest tarball n site=$REPO/build/docsite bad
  ensure_ship_venv || return 1
  rm -rf "$out" && mkdir -p "$out/dist" "$out/ac"
  ac=$out/ac dest=$out/ac/ansible_collections/glm53/serving
  ansible-galaxy collection build --output-path "$out/dist" . >/dev/null || return 1
  tarball=$(ls "$out"/dist/glm53-serving-*.tar.gz)
  ansible-galaxy collection install --offline --force -p "$ac" "$tarball" >/dev/null || return 1
  echo "== antsibull-docs lint-collection-docs on the installed $(basename "$tarball")"
  (cd "$dest" && PATH="$SHIP_VENV/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$ac" \
    antsibull-docs lint-collection-docs --plugin-docs --validate-collection-refs all .) || return 1
  echo "antsibull-docs lint: 0 errors"
  echo "== ansible-lint --profile production in the installed copy (its shipped .ansible-lint)"
  (cd "$dest" && ANSIBLE_COLLECTIONS_PATH="$ac:$ANSIBLE_COLLECTIONS_PATH" ansible-lint --profile production --offline \
    --nocolor) || return 1
  echo "== galaxy-importer $(basename "$tarball")"
  printf '[galaxy-importer]\nRUN_ANSIBLE_TEST = False\nRUN_ANSIBLE_LINT = True\nOFFLINE_ANSIBLE_LINT = True\n' \
    >"$out/galaxy-importer.cfg"
  (cd "$out" && GALAXY_IMPORTER_CONFIG=$out/galaxy-importer.cfg PATH="$SHIP_VENV/bin:$PATH" \
    python3 -m galaxy_importer.main "$tarball" >"$out/importer.log" 2>&1) || { cat "$out/importer.log"; return 1; }
  n=$(grep -cE '^(WARNING|ERROR)' "$out/importer.log")
  grep -E '^(WARNING|ERROR)' "$out/importer.log"
  echo "galaxy-importer: $n warnings or errors ($(grep -c . "$out/importer.log") lines of log)"
  [ "$n" -eq 0 ] || return 1
  echo "== docs site: antsibull-docs sphinx-init, sphinx-build into build/docsite"
  rm -rf "$site" && mkdir -p "$site"
  PATH="$SHIP_VENV/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$ac" antsibull-docs sphinx-init --use-current \
    --dest-dir "$site" glm53.serving >/dev/null || return 1
  # build.sh's sphinx-build, less -W: its warnings are judged below (the offline ones let through)
  sed -i 's/ -W --keep-going$/ --keep-going -w build-warnings.log/' "$site/build.sh"
  (PATH="$SHIP_VENV/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$ac" bash "$site/build.sh" >"$out/sphinx.log" 2>&1) \
    || { tail -30 "$out/sphinx.log"; return 1; }
  bad=$(grep 'WARNING' "$site/build-warnings.log" | grep -v "${OFFLINE_SPHINX[@]}")
  echo "sphinx: $(grep -c 'WARNING' "$site/build-warnings.log") warnings, $(grep -c "${OFFLINE_SPHINX[@]}" \
    "$site/build-warnings.log") of them offline intersphinx ones (docs.ansible.com is not reachable here)"
  [ -z "$bad" ] || { echo "$bad"; return 1; }
  python3 hack/check_docsite.py "$site/build/html" || return 1
}

stage_contract() {
  local t0
  ensure_contract_venv || return 1
  t0=$(date +%s)
  python -m pytest -p no:cacheprovider -v --junitxml="$PROFILE/contract.xml" tests/contract || return 1
  echo "contract tests against vLLM 0.28.0: $(( $(date +%s) - t0 )) s"
}

# The README's quick start as a new user pastes it, in a fresh Debian 12 container (tests/quickstart; its docstring
# says what it substitutes and why): apt-get, a venv with ansible-core 2.18 from PyPI, the clone, the inventory and
# vault, validate.yml, site.yml --check on the container itself, the tarball route. Prints each step's time.
stage_quickstart() {
  python -m pytest -p no:cacheprovider -s -v --junitxml="$PROFILE/quickstart.xml" tests/quickstart
}

docker_up() {  # wait for start_molecule's dockerd and image (it counts their failure)
  until [ -f "$PROFILE/docker.ready" ] || [ -f "$PROFILE/docker.failed" ]; do sleep 5; done
  [ -f "$PROFILE/docker.ready" ]
}

quickstart_without_docker() {
  echo "==== stage quickstart not run: dockerd or the image did not come up (the docker stage says why)"
  printf 'quickstart\t0\t2\t%s\t%s\n' "${LANE:-host}" "$(( $(date +%s) - T0 ))" >>"$PROFILE/stages.tsv"
}

molecule_scenario() {  # one scenario: molecule's output through the profiler (its exit status kept: pipefail)
  local path=$PATH
  # the fleet's performance-gate story runs vLLM 0.28.0's own benchmark client: the contract venv, mounted
  if [ "$1" = fleet ]; then ensure_contract_venv || return 1; fi
  # the build scenario's uv route installs a CPython 3.10 archive made from this machine's
  if [ "$1" = build ]; then ensure_python_archive || return 1; fi
  # the scenarios of LOW_CORE_SCENARIOS run on the lowest supported controller (its molecule, ansible-playbook, pytest)
  case " $LOW_CORE_SCENARIOS " in
    *" $1 "*) ensure_low_venv || return 1; path=$LOW_VENV/bin:$PATH
              echo "molecule $1 with $("$LOW_VENV/bin/ansible" --version | head -1) on $("$LOW_VENV/bin/python" -V)" ;;
  esac
  PATH=$path timeout "${SCENARIO_TIMEOUT:-4200}" molecule test -s "$1" 2>&1 \
    | python3 hack/profile_log.py tee "$PROFILE/molecule-$1.tsv" "$1"
}

host_lane() {
  local stage
  for stage in $STAGES; do
    case $stage in
      yamllint) run_stage yamllint yamllint -s .
                run_stage shellcheck shellcheck -x hack/*.sh .ci/run roles/service/files/verify_unit.sh tests/gpu/*.sh
                run_stage changelog antsibull-changelog lint ;;
      ansible-lint) run_stage ansible-lint stage_ansible_lint ;;
      sanity) run_stage sanity stage_sanity ;;
      # with the molecule lanes on, at the end of the last of them (start_molecule), which ends first
      sanity-2.18) if [ "$LANES" -lt 3 ] || [ "$want_molecule" != 1 ]; then run_stage sanity-2.18 stage_sanity low; fi ;;
      shipped) run_stage shipped stage_shipped ;;
      # --dist loadfile: a module's tests on one worker, so a module fixture (the bad-settings table's runs, the
      # verdict classes' engines) is built once, not once per worker. Not loadgroup: under pytest 9 xdist 3.8's
      # group suffix (item._nodeid) is lost, and every module fixture ran on both workers (394 s of setup twice).
      pytest) run_stage pytest python -m pytest -n 2 --dist loadfile --durations=15 -p no:cacheprovider \
                --junitxml="$PROFILE/pytest.xml" tests/unit tests/integration ;;
      contract) run_stage contract stage_contract ;;
      verdicts) run_stage verdicts python hack/verdict_corpus.py ;;
      # beside start_molecule, once its dockerd is up; with LANES=1 after this lane, when start_molecule has run
      quickstart) if [ "$LANES" -gt 1 ]; then
                    if docker_up; then run_stage quickstart stage_quickstart; else quickstart_without_docker; fi
                  fi ;;
      molecule) ;;
      *) echo "unknown stage $stage"; printf '%s\t0\t2\thost\t0\n' "$stage" >>"$PROFILE/stages.tsv" ;;
    esac
  done
  [ "$LANES" -ge 3 ] && [ "$want_molecule" = 1 ] || return 0
  for stage in $(host_lane_scenarios); do
    docker_up || break  # start_molecule counted the failure
    run_stage "molecule:$stage" molecule_scenario "$stage"
  done
}

wanted_scenarios() {  # the scenarios this run wants: SCENARIOS, or SCENARIO, or every molecule/*/molecule.yml
  local all
  all=$(for f in molecule/*/molecule.yml; do basename "$(dirname "$f")"; done | tr "\n" " ")
  echo " ${SCENARIOS:-${SCENARIO:-$all}} "
}

host_lane_scenarios() {  # those of HOST_LANE_SCENARIOS that this run wants
  local s
  for s in $HOST_LANE_SCENARIOS; do
    case $(wanted_scenarios) in *" $s "*) echo "$s" ;; esac
  done
}

# The scenarios to run (SCENARIOS, default every molecule/*/molecule.yml), dealt into MOLECULE_LANES' lanes (a
# scenario in no lane goes to the shortest list); with LANES=1 or 2, one molecule lane holds them all.
molecule_lanes() {
  local want lane s out=() placed=" " i
  want=$(wanted_scenarios)
  for s in $want; do [ -f "molecule/$s/molecule.yml" ] || { echo "no scenario $s" >&2; return 1; }; done
  IFS=';' read -ra lanes <<<"$MOLECULE_LANES"
  # with three lanes or more, the host lane runs HOST_LANE_SCENARIOS
  if [ "$LANES" -ge 3 ]; then placed+="$(host_lane_scenarios | tr "\n" " ")"; fi
  for lane in "${lanes[@]}"; do
    i=""
    for s in $lane; do
      case $want in *" $s "*) i+="$s "; placed+="$s ";; esac
    done
    out+=("$i")
  done
  for s in $want; do
    case $placed in *" $s "*) continue;; esac
    out[0]+="$s "  # a new scenario: in the first lane until it is given one
  done
  if [ "$LANES" -lt 3 ]; then printf '%s\n' "${out[*]}"; else printf '%s\n' "${out[@]}"; fi
}

molecule_lane() {  # scenarios... (+sanity-2.18: that stage, in this lane)
  local s
  for s in "$@"; do
    case $s in
      +sanity-2.18) run_stage sanity-2.18 stage_sanity low ;;
      *) run_stage "molecule:$s" molecule_scenario "$s" ;;
    esac
  done
}

ensure_apt
ensure_venv || exit 1
ensure_collections || exit 1
# The contract venv (real vLLM 0.28.0), made in the background while the lanes start: the contract stage and the
# fleet scenario wait for it (ensure_contract_venv's lock). Its paths are exported now, for molecule's mounts.
# Without a Python 3.11 the contract stage and the fleet scenario fail, each saying why.
if contract_venv_paths; then
  case " $STAGES " in
    *" contract "*|*" molecule "*) ensure_contract_venv >"$PROFILE/contract-venv.log" 2>&1 & ;;
  esac
fi

start_molecule() {  # the daemon and the image (in this shell: the teardown stops what it started), then the lanes
  local t0 rc n=0 lane ml=""
  if [ "$want_molecule" = 1 ]; then
    ml=$(molecule_lanes) || { printf 'molecule\t0\t2\tmolecule\t0\n' >>"$PROFILE/stages.tsv"; touch "$PROFILE/docker.failed"; return; }
  fi
  mapfile -t mlanes <<<"$ml"
  # sanity on the lowest ansible-core: last in the last lane (the one that ends first), when the host lane leaves it
  # to the molecule lanes; at the start it would slow the host and fleet lanes, which set the wall
  case " $STAGES " in
    *" sanity-2.18 "*) [ "$LANES" -ge 3 ] && mlanes[${#mlanes[@]}-1]="${mlanes[${#mlanes[@]}-1]} +sanity-2.18" ;;
  esac
  t0=$(date +%s)
  start_dockerd && ensure_images && case " $STAGES " in *" quickstart "*) ensure_quickstart_image ;; esac; rc=$?
  printf 'docker\t%s\t%s\tmolecule\t%s\n' "$(( $(date +%s) - t0 ))" "$rc" "$(( t0 - T0 ))" >>"$PROFILE/stages.tsv"
  if [ "$rc" -eq 0 ]; then touch "$PROFILE/docker.ready"; else touch "$PROFILE/docker.failed"; fi
  [ "$rc" -eq 0 ] && [ "$want_molecule" = 1 ] || return
  for lane in "${mlanes[@]}"; do
    n=$((n + 1))
    [ -n "${lane// /}" ] || continue
    # shellcheck disable=SC2086  # the lane is a list of scenario names
    if [ "$LANES" -gt 1 ]; then LANE=molecule$n molecule_lane $lane & LANE_PIDS+="$! "; else LANE=molecule$n molecule_lane $lane; fi
  done
}

LANE_PIDS=""
case " $STAGES " in *" molecule "*) want_molecule=1 ;; *) want_molecule=0 ;; esac
# dockerd and the image: for molecule, and for the quick-start test's container
case " $STAGES " in *" molecule "*|*" quickstart "*) want_docker=1 ;; *) want_docker=0 ;; esac
if [ "$LANES" -gt 1 ]; then
  LANE=host host_lane & LANE_PIDS+="$! "
  [ "$want_docker" = 1 ] && start_molecule
  # shellcheck disable=SC2086
  wait $LANE_PIDS
else
  host_lane
  [ "$want_docker" = 1 ] && start_molecule
  case " $STAGES " in
    *" quickstart "*) if docker_up; then run_stage quickstart stage_quickstart; else quickstart_without_docker; fi ;;
  esac
fi
LANE_PIDS=""

step "profile"
python3 hack/profile_log.py table "$PROFILE" || true
failed_names=$(awk -F'\t' '$3 != 0 {printf "%s ", $1}' "$PROFILE/stages.tsv")
passed=$(awk -F'\t' '$3 == 0' "$PROFILE/stages.tsv" | wc -l)
failed=$(awk -F'\t' '$3 != 0' "$PROFILE/stages.tsv" | wc -l)
step "summary (wall $(( $(date +%s) - T0 )) s)${failed_names:+; failed: $failed_names}"
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
