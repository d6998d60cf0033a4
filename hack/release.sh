#!/usr/bin/env bash
# `make release VERSION=x.y.z`: cut a release of the collection from a clean checkout.
#   1. refuses, changing nothing: a VERSION that is not x.y.z, one not above the last release in the changelog,
#      a tag that exists already, a tree with uncommitted changes;
#   2. writes the version where it is named (galaxy.yml, the report's roles/probes/vars/main.yml, the README's
#      install lines and execution-environment.yml's example tag);
#   3. turns the changelog fragments into the release (antsibull-changelog release: changelogs/changelog.yaml and
#      CHANGELOG.rst), then lints the result;
#   4. commits "Release x.y.z" and makes the annotated tag x.y.z on that commit.
# Between releases galaxy.yml carries the next version as a pre-release (x.y.z-dev); right after a release, set the
# next one (docs/releasing.md). Pushing is left to you: git push origin HEAD x.y.z.
# Knob: RELEASE_DATE (YYYY-MM-DD, default today, UTC).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "release: $*" >&2; exit 2; }

version=${VERSION:-${1:-}}
[ -n "$version" ] || die "say the version: make release VERSION=x.y.z"
[[ $version =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$ ]] \
  || die "VERSION=$version is not a release version x.y.z (digits only, no v prefix, no leading zeros)"
date=${RELEASE_DATE:-$(date -u +%Y-%m-%d)}
[[ $date =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] || die "RELEASE_DATE=$date is not YYYY-MM-DD"

command -v antsibull-changelog >/dev/null || die "antsibull-changelog is not on PATH (the tool venv has it: make test installs it)"
git rev-parse --git-dir >/dev/null 2>&1 || die "not a git checkout"
[ -z "$(git status --porcelain)" ] || die "the tree has uncommitted changes; commit or stash them first"
! git rev-parse -q --verify "refs/tags/$version" >/dev/null || die "tag $version exists already"

# The last release in the changelog, and the version galaxy.yml carries now.
last=$(python3 - <<'EOF'
import yaml
with open("changelogs/changelog.yaml") as fh:
    releases = (yaml.safe_load(fh) or {}).get("releases") or {}
print(max(releases, key=lambda v: tuple(int(p) for p in v.split("."))) if releases else "")
EOF
)
current=$(sed -n 's/^version: *//p' galaxy.yml)
[[ $current =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] \
  || die "galaxy.yml's version '$current' is neither x.y.z nor a pre-release x.y.z-dev"
newer() {  # a b: is a above b (as versions)?
  [ -z "$2" ] && return 0
  [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -1)" = "$1" ]
}
newer "$version" "$last" || die "VERSION=$version is not above the last release in the changelog ($last)"

# The version, where it is named.
sed -i "s/^version: .*/version: $version/" galaxy.yml
sed -i "s/^__probes_collection_version: .*/__probes_collection_version: $version/" roles/probes/vars/main.yml
sed -i -e "s/glm53-serving-$current\\.tar\\.gz/glm53-serving-$version.tar.gz/g" \
  -e "s/glm53-serving-ee:$current/glm53-serving-ee:$version/g" \
  -e "s/^\\(      version: \\)\\(main\\|$current\\)\\( .*\\)\\?$/\\1$version   # a release tag; each release is one (docs\\/releasing.md)/" README.md
sed -i "s/glm53-serving-ee:$current/glm53-serving-ee:$version/g" execution-environment.yml

antsibull-changelog release --version "$version" --date "$date"
antsibull-changelog lint

git add -A
git commit -q -m "Release $version"
git tag -a "$version" -m "glm53.serving $version"
echo "released $version ($(git rev-parse --short HEAD)); push with: git push origin HEAD $version"
