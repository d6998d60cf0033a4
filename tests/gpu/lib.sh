# shellcheck shell=bash
# Shared by tests/gpu/*.sh: ansible-core from carried wheels, and a venv that sees the host's torch.
#   WHEELS=dir (ansible-core, resolvelib, cryptography, cffi, pycparser; the build packages)
setup_ansible() {
  python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --target /tmp/ansible-site \
    "$WHEELS"/ansible_core-*.whl "$WHEELS"/resolvelib-*.whl "$WHEELS"/cryptography-*.whl "$WHEELS"/cffi-*.whl \
    "$WHEELS"/pycparser-*.whl
  export PYTHONPATH=/tmp/ansible-site
  mkdir -p /tmp/collections/ansible_collections/glm53
  ln -sfn "$PWD" /tmp/collections/ansible_collections/glm53/serving
}

# make_venv PATH REQUIREMENT...: the host's torch (and what it needs), as the venv role's torch would be: the
# host's python3 may itself be a venv, whose packages --system-site-packages would not reach, so a .pth after
# the venv's own site-packages; then the named packages from the carried wheels.
make_venv() {
  local venv=$1
  shift
  python3 -m venv "$venv"
  python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' \
    > "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/host-packages.pth"
  "$venv/bin/pip" install -q --no-index --no-deps --find-links "$WHEELS" "$@"
}

# run_playbook PLAYBOOK EXTRA_VARS_JSON
run_playbook() {
  ANSIBLE_COLLECTIONS_PATH=/tmp/collections ANSIBLE_NOCOLOR=1 python3 /tmp/ansible-site/bin/ansible-playbook \
    -i localhost, -c local "$1" -e "$2"
}
