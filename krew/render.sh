#!/usr/bin/env bash
# Fill krew/lanaccess.yaml for one release from goreleaser's output: the version (from
# DIST/metadata.json, or $VERSION), the download URLs and each archive's sha256 (from
# DIST/checksums.txt). The manifest's shape is kept; only those values change.
#
#   krew/render.sh [DIST [OUTPUT]]
#     DIST    goreleaser's dist directory (default: dist)
#     OUTPUT  where to write (default: DIST/krew/lanaccess.yaml; "-" for stdout). A release
#             writes krew/lanaccess.yaml itself to keep the committed manifest in step.
#
# Fails, naming it, when an archive of the manifest has no checksum: a manifest never points
# at an archive that was not built.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
template="$here/lanaccess.yaml"
dist="${1:-dist}"
output="${2:-$dist/krew/lanaccess.yaml}"
checksums="$dist/checksums.txt"

[ -r "$checksums" ] || { echo "render.sh: $checksums not found: run goreleaser first" >&2; exit 1; }

version="${VERSION:-}"
if [ -z "$version" ]; then
  [ -r "$dist/metadata.json" ] || { echo "render.sh: $dist/metadata.json not found and VERSION not set" >&2; exit 1; }
  # goreleaser's metadata.json: {"project_name":...,"tag":"v0.1.0",...,"version":"0.1.0",...}
  version="$(tr -d '\n' < "$dist/metadata.json" | grep -o '"version"[[:space:]]*:[[:space:]]*"[^"]*"' | head -n1 | sed 's/.*"\([^"]*\)"$/\1/')"
  [ -n "$version" ] || { echo "render.sh: no version in $dist/metadata.json" >&2; exit 1; }
fi
case "$version" in v*) ;; *) version="v$version" ;; esac

rendered="$(awk -v version="$version" -v checksums="$checksums" '
  BEGIN {
    while ((getline line < checksums) > 0) {
      n = split(line, f, /[[:space:]]+/)
      if (n >= 2) sum[f[2]] = f[1]
    }
  }
  # spec.version (indented under spec:, not the uri lines)
  /^  version:/ { print "  version: " version; next }
  /^[[:space:]]*uri:/ {
    sub(/\/releases\/download\/[^\/]+\//, "/releases/download/" version "/")
    n = split($0, parts, "/")
    archive = parts[n]
    print
    next
  }
  /^[[:space:]]*sha256:/ {
    if (archive == "" || !(archive in sum)) {
      printf "render.sh: no checksum for %s in %s\n", (archive == "" ? "(no uri before sha256)" : archive), checksums > "/dev/stderr"
      exit 1
    }
    match($0, /^[[:space:]]*/)
    print substr($0, 1, RLENGTH) "sha256: \"" sum[archive] "\""
    archive = ""
    next
  }
  { print }
' "$template")"

if [ "$output" = "-" ]; then
  printf '%s\n' "$rendered"
else
  mkdir -p "$(dirname "$output")"
  printf '%s\n' "$rendered" > "$output"
  echo "render.sh: wrote $output for $version" >&2
fi
