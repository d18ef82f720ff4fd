#!/usr/bin/env bash
# Validate krew manifests with krew's own validator (sigs.k8s.io/krew/cmd/validate-krew-manifest,
# pinned), the one the krew-index CI runs: structure, plugin name = file name, sha256 form,
# platform selectors that match supported platforms without overlapping.
#
#   krew/validate.sh [MANIFEST...]     (default: krew/lanaccess.yaml)
#
# -skip-install: installing means downloading the release archives, which do not exist before a
# release; `make release-check` validates the manifest rendered from the snapshot archives.
set -euo pipefail
KREW_VERSION=v0.4.3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ $# -gt 0 ] || set -- "$here/lanaccess.yaml"
for manifest in "$@"; do
  if ! out="$(go run "sigs.k8s.io/krew/cmd/validate-krew-manifest@$KREW_VERSION" -manifest "$manifest" -skip-install 2>&1)"; then
    # klog's own lines (I/W/E/F + date) without the stack dump that follows a fatal one.
    printf '%s\n' "$out" | grep -E '^[IWEF][0-9]{4} ' >&2 || printf '%s\n' "$out" >&2
    echo "validate.sh: $manifest is not a valid krew manifest" >&2
    exit 1
  fi
  echo "validate.sh: $manifest is valid for krew $KREW_VERSION"
done
