#!/usr/bin/env bash
# Writes charts/upgrade/<version>.yaml: the install HelmUpgradeTest upgrades from, this checkout's
# chart rendered as the kube-prometheus-stack variant installs it (every kind of object the chart
# has but the web configuration's Secret). Run it in a release's checkout once the release is
# made, commit the file, and remove the previous release's: the test upgrades from the newest.
# Uses $HELM, else helm on the PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."

version=$(agent/image/version.sh)
out="charts/upgrade/$version.yaml"
{
    echo "# driver-alias-agent $version as released, for HelmUpgradeTest: written by charts/upgrade/snapshot.sh"
    echo "# (helm template driver-alias-agent charts/driver-alias-agent --namespace driver-alias"
    echo "#  --values charts/driver-alias-agent/examples/kube-prometheus-stack.yaml)."
    "${HELM:-helm}" template driver-alias-agent charts/driver-alias-agent --namespace driver-alias \
        --values charts/driver-alias-agent/examples/kube-prometheus-stack.yaml
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "$out"
