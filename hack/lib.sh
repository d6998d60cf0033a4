# shellcheck shell=bash
# Shared bootstrap for `make test` and `make demo` on a bare Debian 12 machine:
# root, no container daemon running, only PyPI and Debian's apt reachable.
# Molecule with systemd containers: Debian's docker.io, our own dockerd, images built with mmdebstrap.
#
# Knobs (environment):
#   GLM53_WORK      scratch dir for the venv, collections, logs (default /var/tmp/glm53-ci)
#   WITH_JAMMY=1    also build an Ubuntu 22.04 image (optional; skipped with a reason if the
#                   Ubuntu archive does not answer)
#   KEEP_DAEMON=1   leave dockerd running at exit
#   GLM53_DEBIAN_MIRROR  Debian archive for the test images (default: the one this machine's apt uses)

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=${GLM53_WORK:-/var/tmp/glm53-ci}
VENV=$WORK/venv
T0=${T0:-$(date +%s)}
mkdir -p "$WORK"

# Ranges for the controller toolchain (ansible-core 2.21 needs Python >= 3.12); hack/constraints.txt locks
# them and everything they pull in to exact versions (`make lock` refreshes it).
CORE_PIN='ansible-core>=2.21,<2.22'
BUNDLE_PIN='ansible>=14,<15'
TOOL_PINS=(
  'molecule>=26,<27' 'molecule-plugins[docker]>=26' 'pytest-testinfra>=10,<11'
  'ansible-lint>=25' 'yamllint>=1.35' 'pytest>=8' 'pytest-xdist>=3' 'setuptools>=70'
  'hypothesis>=6.100'  # property tests of the verdict code (tests/unit/plugins/test_verdict_properties.py)
  'prometheus-client>=0.20'  # the reference parser the collection's /metrics reader is tested against
  'ansible-builder>=3.1,<4'  # makes the execution environment's build context in tests
  'antsibull-changelog>=0.30,<1'  # lints the changelog fragments and cuts releases
  'ansible-runner>=2.4,<3'  # runs heal.yml as concurrent slices, as AWX does (tests/integration/test_sliced_runs.py)
  'grafana-foundation-sdk'  # hack/gen_dashboard.py builds the monitoring role's dashboard with it
)
# The shipping checks' own venv (the `shipped` stage): the docs site's toolchain needs docutils < 0.23, which the
# tool venv's lock is past, and galaxy-importer brings its own ansible-lint range. hack/constraints-ship.txt locks it.
SHIP_PINS=(
  "$CORE_PIN" 'antsibull-docs>=2.28,<3' 'sphinx>=8' 'sphinx-ansible-theme>=0.10' 'ansible-pygments'
  'galaxy-importer>=0.4.44,<0.5'
)
SHIP_VENV=$WORK/ship-venv
# The lowest ansible-core meta/runtime.yml supports, on Debian 12's own Python 3.11: ansible-test sanity
# (stage sanity-2.18) and the molecule scenarios in LOW_CORE_SCENARIOS run with it. hack/constraints-low.txt locks it.
LOW_CORE_PIN='ansible-core>=2.18,<2.19'
LOW_PINS=("$LOW_CORE_PIN" 'molecule>=26,<27' 'molecule-plugins[docker]>=26' 'pytest-testinfra>=10,<11' 'pytest>=8')
LOW_VENV=$WORK/venv-2.18
LOW_CORE_SCENARIOS=${LOW_CORE_SCENARIOS:-build}
# Packages inside the systemd test images. Changing this list changes the image tag.
IMAGE_PACKAGES=python3,python3-venv,systemd,systemd-sysv,dbus,sudo,tmux,procps,psmisc,iproute2,ca-certificates,git,curl
IMAGE_TAG=$(printf '%s' "$IMAGE_PACKAGES" | sha1sum | cut -c1-10)
export GLM53_IMAGE_BOOKWORM="local/glm53-bookworm-systemd:$IMAGE_TAG"
export GLM53_IMAGE_JAMMY="local/glm53-jammy-systemd:$IMAGE_TAG"
# The quick-start test's image (tests/quickstart): Debian 12 as a fresh server has it, without what the README's steps
# install (git, python3-venv, pip's packages) and with no apt lists, as mmdebstrap leaves them.
QUICKSTART_PACKAGES=systemd,systemd-sysv,sudo
GLM53_IMAGE_QUICKSTART="local/glm53-quickstart-bookworm:$(printf '%s' "$QUICKSTART_PACKAGES" | sha1sum | cut -c1-10)"
export GLM53_IMAGE_QUICKSTART

step() { printf '\n==== [+%4ss] %s\n' "$(( $(date +%s) - T0 ))" "$*"; }

ensure_apt() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
  command -v systemd-analyze >/dev/null || missing+=(systemd)
  command -v tmux >/dev/null || missing+=(tmux)
  command -v git >/dev/null || missing+=(git)
  command -v rsync >/dev/null || missing+=(rsync)
  command -v shellcheck >/dev/null || missing+=(shellcheck)
  command -v chromium >/dev/null || missing+=(chromium fonts-wqy-zenhei)  # the report screenshot test
  command -v promtool >/dev/null || missing+=(prometheus)  # promtool checks the monitoring role's output
  # the dashboard test: a real Prometheus scrapes stand-ins and node_exporter's textfile collector
  command -v prometheus-node-exporter >/dev/null || missing+=(prometheus-node-exporter)
  command -v prometheus-alertmanager >/dev/null || missing+=(prometheus-alertmanager)  # the rollout's silences
  command -v haproxy >/dev/null || missing+=(haproxy)  # the HAProxy drain hook's test (its runtime API)
  command -v etcd >/dev/null || missing+=(etcd-server)  # the store of sliced heal runs (fleet_claim)
  command -v patchelf >/dev/null || missing+=(patchelf)  # the build scenario's standalone CPython archive
  if [ ${#missing[@]} -gt 0 ]; then
    step "apt: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" ca-certificates >/dev/null
  fi
}

# find_python MIN MAX: the first Python 3.MIN to 3.MAX (with ssl and venv) from pyenv or the system.
find_python() {
  local c
  for c in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3 /usr/bin/python3.[0-9]* /usr/local/bin/python3.[0-9]*; do
    case $c in *-config) continue ;; esac
    if [ -x "$c" ] && "$c" -c "import sys,ssl,venv; sys.exit(not (3, $1) <= sys.version_info[:2] <= (3, $2))" 2>/dev/null; then
      echo "$c"; return 0
    fi
  done
  return 1
}

ensure_venv() {
  local stamp want py
  want=$( (printf '%s\n' "$CORE_PIN" "${TOOL_PINS[@]}"; cat "$REPO/hack/constraints.txt") | sha1sum | cut -c1-10)
  stamp=$VENV/.glm53-pins
  if [ -x "$VENV/bin/ansible" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    :
  else
    step "venv: $CORE_PIN and the test tools"
    py=$(find_python 12 99) || { echo "no Python >= 3.12 found (pyenv or /usr/bin); ansible-core 2.21 needs it" >&2; return 1; }
    rm -rf "$VENV"
    "$py" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q -c "$REPO/hack/constraints.txt" "$CORE_PIN" "${TOOL_PINS[@]}"
    echo "$want" >"$stamp"
  fi
  # shellcheck disable=SC1091
  . "$VENV/bin/activate"
  # The stand-in engine's own tests run on the controller too.
  pip install -q --no-deps --no-build-isolation -e "$REPO/tests/standin" 2>/dev/null \
    || pip install -q -e "$REPO/tests/standin"
}

# pinned_venv DIR MARKER MIN MAX LOCK WHAT PINS...: a venv at DIR from the first Python 3.MIN to 3.MAX with PINS
# installed -c LOCK, made again only when the pins or the lock change (a stamp of both) or DIR/bin/MARKER is gone.
pinned_venv() {
  local dir=$1 marker=$2 min=$3 max=$4 lock=$5 what=$6 want py
  shift 6
  want=$( (printf '%s\n' "$@"; cat "$lock") | sha1sum | cut -c1-10)
  [ -x "$dir/bin/$marker" ] && [ "$(cat "$dir/.glm53-pins" 2>/dev/null)" = "$want" ] && return 0
  step "$what"
  py=$(find_python "$min" "$max") || { echo "no Python 3.$min to 3.$max found (pyenv or /usr/bin) for the $what" >&2; return 1; }
  rm -rf "$dir" && "$py" -m venv "$dir" || return 1
  "$dir/bin/pip" install -q --upgrade pip 2>&1 | grep -v '^WARNING: Location'
  "$dir/bin/pip" install -q -c "$lock" "$@" 2>&1 | grep -v '^WARNING: Location'
  [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
  echo "$want" >"$dir/.glm53-pins"
}

ensure_ship_venv() {
  pinned_venv "$SHIP_VENV" antsibull-docs 12 99 "$REPO/hack/constraints-ship.txt" \
    "ship venv: antsibull-docs, sphinx, galaxy-importer" "${SHIP_PINS[@]}"
}

# The lowest supported controller: ansible-core 2.18 and molecule on Python 3.11, in a venv of its own.
ensure_low_venv() {
  pinned_venv "$LOW_VENV" molecule 11 11 "$REPO/hack/constraints-low.txt" \
    "low venv: $LOW_CORE_PIN and molecule on Python 3.11" "${LOW_PINS[@]}"
}

# The build scenario's Python 3.10 for the uv route: this machine's CPython 3.10 (pyenv's), repackaged by
# tests/helpers/make_standalone_python.py in python-build-standalone's install_only layout, once (kept by the
# interpreter's version and the helper's hash). Exports GLM53_PYTHON_ARCHIVE_DIR (the archive and python.json).
ensure_python_archive() {
  local py dir=$WORK/python-archive want
  py=$(find_python 10 10) || { echo "no Python 3.10 found (pyenv or /usr/bin): the build scenario's uv route needs one to pack" >&2; return 1; }
  want=$( ("$py" -V; cat "$REPO/tests/helpers/make_standalone_python.py") | sha1sum | cut -c1-10)
  if [ "$(cat "$dir/.stamp" 2>/dev/null)" != "$want" ]; then
    rm -rf "$dir" && "$py" "$REPO/tests/helpers/make_standalone_python.py" "$dir" || return 1
    echo "$want" >"$dir/.stamp"
  fi
  export GLM53_PYTHON_ARCHIVE_DIR=$dir
}

# The real vLLM 0.28.0 for tests/contract and the fleet scenario's performance gate: a Python 3.11 venv (the CPU
# torch 2.13.0 wheel on these machines is for 3.11), installed --no-deps from a full pin list, cached under $WORK by
# the list's hash. Cold: about 1 minute plus the 315 MB vLLM wheel download; warm: nothing. A lock lets two lanes
# ask for it at once (make test starts it in the background; the contract stage and the fleet scenario wait).
# Exports GLM53_VLLM_CONTRACT_VENV, and GLM53_VLLM_CONTRACT_PYTHON: the prefix of the Python it was made with, which
# the fleet's containers mount at the same path (the venv's python links into it), or the venv itself when that
# Python is the system's (/usr: the containers' own Debian 3.11 stands in, and /usr must not be mounted over).
contract_venv_paths() {
  local req=$REPO/tests/contract/requirements-vllm-0.28.0.txt py prefix
  GLM53_VLLM_CONTRACT_VENV=$WORK/vllm-0.28.0-$(sha1sum "$req" | cut -c1-10)
  py=$(find_python 11 11) || { echo "no Python 3.11 found (pyenv or /usr/bin); the CPU torch wheel needs it" >&2; return 1; }
  prefix=$(dirname "$(dirname "$(readlink -f "$py")")")
  case $prefix in /usr|/usr/local|/) prefix=$GLM53_VLLM_CONTRACT_VENV ;; esac
  GLM53_VLLM_CONTRACT_PYTHON=$prefix
  export GLM53_VLLM_CONTRACT_VENV GLM53_VLLM_CONTRACT_PYTHON
  CONTRACT_PY=$py
}

ensure_contract_venv() {
  local req=$REPO/tests/contract/requirements-vllm-0.28.0.txt dir t0 lock rc=0
  contract_venv_paths || return 1
  dir=$GLM53_VLLM_CONTRACT_VENV
  [ -f "$dir/.complete" ] && return 0
  exec {lock}>"$WORK/.contract-venv.lock"
  flock "$lock"
  if [ ! -f "$dir/.complete" ]; then
    t0=$(date +%s)
    step "contract venv: real vLLM 0.28.0 with CPU torch (--no-deps, $(grep -c '^[a-zA-Z]' "$req") pins)"
    rm -rf "$WORK"/vllm-0.28.0-*
    if "$CONTRACT_PY" -m venv "$dir"; then
      "$dir/bin/pip" install -q --no-deps -r "$req" 2>&1 | grep -v '^WARNING: Location'
      rc=${PIPESTATUS[0]}
    else
      rc=1
    fi
    [ "$rc" -eq 0 ] && touch "$dir/.complete" \
      && echo "contract venv made in $(( $(date +%s) - t0 )) s ($(du -sh "$dir" | cut -f1))"
  fi
  exec {lock}>&-
  return "$rc"
}

# Galaxy is unreachable: unpack the needed collections and their dependency closure
# from the PyPI `ansible` wheel.
ensure_collections() {
  local want
  want="community.docker ansible.posix community.general"
  if [ -f "$WORK/collections/.done" ] && [ "$(cat "$WORK/collections/.done")" = "$want" ]; then
    :
  else
    step "collections from the PyPI '$BUNDLE_PIN' wheel: $want"
    rm -rf "$WORK/wheels" "$WORK/collections"
    pip download -q --no-deps -d "$WORK/wheels" "$BUNDLE_PIN"
    # shellcheck disable=SC2086  # $want is a word list on purpose
    python - "$WORK/collections" "$WORK"/wheels/ansible-*.whl "$REPO/galaxy.yml" $want <<'EOF'
import json, sys, zipfile, yaml
dest, whl, galaxy, *todo = sys.argv[1:]
todo += list((yaml.safe_load(open(galaxy)) or {}).get("dependencies") or {})
done, files = set(), []
with zipfile.ZipFile(whl) as z:
    names = z.namelist()
    while todo:
        c = todo.pop()
        if c in done:
            continue
        done.add(c)
        pre = "ansible_collections/%s/" % c.replace(".", "/")
        mine = [n for n in names if n.startswith(pre)]
        if not mine:
            sys.exit("collection %s is not in %s" % (c, whl))
        files += mine
        todo += list(json.loads(z.read(pre + "MANIFEST.json"))["collection_info"].get("dependencies") or {})
    z.extractall(dest, files)
print("unpacked %d files: %s" % (len(files), " ".join(sorted(done))))
EOF
    rm -rf "$WORK/wheels"
    echo "$want" >"$WORK/collections/.done"
  fi
  # This checkout is glm53.serving there: a link, not a copy (molecule's prerun would install a copy, and two
  # molecule lanes installing it at once race; .config/molecule/config.yml turns the prerun off).
  mkdir -p "$WORK/collections/ansible_collections/glm53"
  rm -rf "$WORK/collections/ansible_collections/glm53/serving"
  ln -sfn "$REPO" "$WORK/collections/ansible_collections/glm53/serving"
  export ANSIBLE_COLLECTIONS_PATH="$WORK/collections:$HOME/.ansible/collections"
}

DOCKERD_STARTED=0
start_dockerd() {
  _try_dockerd() {
    setsid dockerd --storage-driver="$1" >"$WORK/dockerd.log" 2>&1 </dev/null &
    echo $! >"$WORK/dockerd.pid"
    for _ in $(seq 1 120); do
      docker info >/dev/null 2>&1 && return 0
      kill -0 "$(cat "$WORK/dockerd.pid")" 2>/dev/null || break
      sleep 0.5
    done
    return 1
  }
  if docker info >/dev/null 2>&1; then
    echo "a docker daemon is already running; using it (it will not be stopped)"
    return 0
  fi
  step "dockerd (background, overlay2)"
  if ! _try_dockerd overlay2; then
    tail -20 "$WORK/dockerd.log"; echo "overlay2 failed, retrying with vfs (slower, more disk)"
    kill "$(cat "$WORK/dockerd.pid")" 2>/dev/null || true; sleep 2
    _try_dockerd vfs || { tail -30 "$WORK/dockerd.log"; return 1; }
  fi
  DOCKERD_STARTED=1
  docker info --format 'server {{.ServerVersion}}, storage {{.Driver}}, cgroup v{{.CgroupVersion}}'
}

stop_dockerd() {
  local pid ids
  [ "$DOCKERD_STARTED" = 1 ] || return 0
  [ "${KEEP_DAEMON:-0}" = 1 ] && { echo "KEEP_DAEMON=1: dockerd left running (pid $(cat "$WORK/dockerd.pid"))"; return 0; }
  ids=$(docker ps -aq --filter label=owner=molecule 2>/dev/null || true)
  # shellcheck disable=SC2086
  [ -n "$ids" ] && docker rm -f $ids >/dev/null 2>&1
  pid=$(cat "$WORK/dockerd.pid")
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then echo "dockerd $pid still alive, killing"; kill -KILL "$pid"; fi
  rm -f "$WORK/dockerd.pid"
  DOCKERD_STARTED=0
  echo "dockerd $pid stopped"
}

MASK=(getty.target console-getty.service systemd-sysctl.service systemd-udevd.service
  systemd-udev-trigger.service systemd-remount-fs.service sys-kernel-debug.mount
  sys-kernel-tracing.mount dev-hugepages.mount systemd-firstboot.service
  systemd-modules-load.service systemd-timesyncd.service)

build_image() {  # tag suite mirror-line [mmdebstrap options...]  (the packages: BUILD_PACKAGES, or IMAGE_PACKAGES)
  local tag=$1 suite=$2 mirror=$3 tar; shift 3
  tar=$WORK/$(printf '%s' "$tag" | tr '/:' '__').tar
  if docker image inspect "$tag" >/dev/null 2>&1; then echo "$tag exists"; return 0; fi
  step "image $tag (mmdebstrap $suite + docker import)"
  # The hooks run in mmdebstrap's shell, where $1 is the new root: single quotes are meant.
  # shellcheck disable=SC2016
  mmdebstrap --quiet --variant=minbase "$@" \
    --include="${BUILD_PACKAGES:-$IMAGE_PACKAGES}" \
    --customize-hook="chroot \"\$1\" systemctl mask ${MASK[*]} >/dev/null 2>&1 || true" \
    --customize-hook='chroot "$1" systemctl set-default multi-user.target >/dev/null 2>&1' \
    --customize-hook=': > "$1/etc/machine-id"' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    "$suite" "$tar" "$mirror"
  docker import -c 'ENV container=docker' -c 'ENV LANG=C.UTF-8' -c 'CMD ["/lib/systemd/systemd"]' \
    "$tar" "$tag" >/dev/null
  rm -f "$tar"
  echo "built $tag"
}

# debian_mirror SUITE: the Debian archive this machine's own apt uses for SUITE (one-line sources.list
# and deb822 .sources files, as apt reads them), or $GLM53_DEBIAN_MIRROR when set; deb.debian.org if
# the machine's apt names none. Behind a proxy, apt's Acquire::http::Proxy is passed on to mmdebstrap.
debian_mirror() {
  local suite=$1 uri=${GLM53_DEBIAN_MIRROR:-} etc=${GLM53_APT_ETC:-/etc/apt}
  if [ -z "$uri" ]; then
    uri=$(python3 - "$suite" "$etc/sources.list" "$etc"/sources.list.d/*.list "$etc"/sources.list.d/*.sources <<'PY'
import re, sys
suite, paths = sys.argv[1], sys.argv[2:]
def stanzas(path, text):
    if path.endswith(".sources"):
        for block in re.split(r"\n\s*\n", text):
            f = {}
            for line in block.splitlines():
                m = re.match(r"([A-Za-z-]+):\s*(.*)", line)
                if m and not line.startswith("#"):
                    f[m.group(1).lower()] = m.group(2).split()
            if "deb" in f.get("types", []) and f.get("enabled", ["yes"]) != ["no"]:
                yield f.get("uris", []), f.get("suites", [])
    else:
        for line in text.splitlines():
            m = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
            if m:
                yield [m.group(1)], [m.group(2)]
for path in paths:
    try:
        text = open(path).read()
    except OSError:
        continue
    for uris, suites in stanzas(path, text):
        if suite in suites and uris:
            print(uris[0]); sys.exit(0)
PY
)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

build_bookworm_image() {  # tag: a Debian 12 image from the archive this machine's apt uses, its proxy passed on
  local mirror proxy opts=()
  mirror=$(debian_mirror bookworm)
  proxy=$(apt-config dump 2>/dev/null | sed -n 's/^Acquire::http::Proxy "\(.*\)";$/\1/p' | head -1)
  [ -n "$proxy" ] && opts+=("--aptopt=Acquire::http::Proxy \"$proxy\";")
  echo "Debian mirror for the test images: $mirror (GLM53_DEBIAN_MIRROR overrides)${proxy:+; apt proxy $proxy passed on}"
  build_image "$1" bookworm "deb $mirror bookworm main" "${opts[@]}"
}

ensure_images() {
  local mirror
  mirror=$(debian_mirror bookworm)  # the jammy image's keyring comes from it too
  build_bookworm_image "$GLM53_IMAGE_BOOKWORM"
  if [ "${WITH_JAMMY:-0}" != 1 ]; then
    echo "SKIP ubuntu 22.04 image: optional (the Ubuntu archive is not a promised registry); WITH_JAMMY=1 builds it"
  else
    if ! curl -fsI --max-time 10 http://archive.ubuntu.com/ubuntu/dists/jammy/Release >/dev/null 2>&1; then
      echo "SKIP ubuntu 22.04 image: archive.ubuntu.com did not answer (it is not a promised registry here)"
      return 0
    fi
    local K="$WORK/apt-trixie"
    mkdir -p "$K/lists/partial" "$K/cache/archives/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" >"$K/sources.list"
    local KA=(-o Dir::Etc::SourceList="$K/sources.list" -o Dir::Etc::SourceParts=/dev/null
              -o Dir::State::Lists="$K/lists" -o Dir::Cache="$K/cache" -o APT::Sandbox::User=root)
    apt-get "${KA[@]}" -qq update
    (cd "$K" && apt-get "${KA[@]}" -qq download ubuntu-keyring)
    dpkg-deb -x "$K"/ubuntu-keyring_*_all.deb "$K/root"
    build_image "$GLM53_IMAGE_JAMMY" jammy \
      "deb http://archive.ubuntu.com/ubuntu jammy main universe" \
      --keyring="$K/root/usr/share/keyrings/ubuntu-archive-keyring.gpg"
  fi
}

ensure_quickstart_image() {
  BUILD_PACKAGES=$QUICKSTART_PACKAGES build_bookworm_image "$GLM53_IMAGE_QUICKSTART"
}

# Molecule scenarios live in the top-level molecule/ folder, not extensions/molecule/.
export MOLECULE_GLOB='molecule/*/molecule.yml'
export PY_COLORS=0 ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1 NO_COLOR=1
