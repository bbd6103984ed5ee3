#!/usr/bin/env bash
# Prints the release's version: the parent pom's <version> (pom.xml at the repository root), the
# one the jar reports (--version, driver_alias_build_info), the image is tagged with and
# k8s/base/kustomization.yaml deploys. ReleaseVersionTest checks it against Maven's reading.
#
#   docker build -f agent/Dockerfile --build-arg VERSION=$(agent/image/version.sh) ...
set -euo pipefail
pom=$(cd "$(dirname "$0")/../.." && pwd)/pom.xml
# The project's own <version>: the first one indented as a child of <project> (the parent pom
# has no <parent> whose version could come first).
version=$(sed -n 's:^  <version>\([^<]*\)</version>[[:space:]]*$:\1:p' "$pom" | head -1)
[[ -n $version ]] || { echo "version.sh: no <version> in $pom" >&2; exit 1; }
echo "$version"
