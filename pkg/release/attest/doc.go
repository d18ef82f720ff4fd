// Package attest holds the test of what a release attests about its archives (build tag
// release, run by `make release-check` on goreleaser's snapshot): an SPDX SBOM per archive,
// written by syft, that lists every module linked into the binary, and a cosign signature of
// checksums.txt, which lists the archives and the SBOMs.
package attest
