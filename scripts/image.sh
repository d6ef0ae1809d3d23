#!/usr/bin/env bash
# Builds rollplane's container image from the Dockerfile, with the OCI labels filled from package.json and git.
#
#   scripts/image.sh build [ENGINE BUILD ARGS…]    tags rollplane:<version> (e.g. --build-arg BASE=…, --platform …)
#   scripts/image.sh tag                            prints the tag it builds
#
# ENGINE is podman if installed, else docker; CONTAINER_ENGINE overrides it (it may hold global options, e.g.
# "podman --runtime runc"). ROLLPLANE_IMAGE overrides the tag. `.ci/image-check` builds it offline and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(node -p 'require("./package.json").version')
image=${ROLLPLANE_IMAGE:-rollplane:$version}
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
if [ "$revision" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then revision="$revision-dirty"; fi
source_url=$(node -p 'const r = require("./package.json").repository; (typeof r === "string" ? r : r?.url) ?? ""')
[ -n "$source_url" ] || source_url=$(git remote get-url origin 2>/dev/null || echo unknown)

case "${1:-}" in
  tag)
    echo "$image"
    ;;
  build)
    shift
    if [ -n "${CONTAINER_ENGINE:-}" ]; then read -r -a engine <<<"$CONTAINER_ENGINE"
    elif command -v podman >/dev/null 2>&1; then engine=(podman)
    elif command -v docker >/dev/null 2>&1; then engine=(docker)
    else echo "scripts/image.sh: neither podman nor docker is installed" >&2; exit 1
    fi
    "${engine[@]}" build \
      --build-arg VERSION="$version" --build-arg REVISION="$revision" --build-arg SOURCE="$source_url" \
      --tag "$image" "$@" .
    ;;
  *)
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
