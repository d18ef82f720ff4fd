package corefile

import (
	"slices"
	"strconv"
	"strings"
)

// stockRepositories are the image repositories that publish stock CoreDNS builds, unchanged:
// the project's own (coredns/coredns on Docker Hub, registry.k8s.io/coredns/coredns and its
// predecessor k8s.gcr.io, which kubeadm pins) and k3s's mirror of it
// (rancher/mirrored-coredns-coredns, k3s scripts/airgap/image-list.txt). A CoreDNS image of
// version X from one of them knows exactly CoreDNS X's plugin.cfg (docs/semantics.md 6.2).
var stockRepositories = []string{
	"coredns/coredns", "docker.io/coredns/coredns", "registry.k8s.io/coredns/coredns",
	"k8s.gcr.io/coredns/coredns", "k8s.gcr.io/coredns", "registry.k8s.io/coredns",
	"docker.io/rancher/mirrored-coredns-coredns", "rancher/mirrored-coredns-coredns",
	// k3s's earlier name for the same image (manifests/coredns.yaml at commit 0064a39615fc)
	"docker.io/rancher/coredns-coredns", "rancher/coredns-coredns",
}

// Build is which CoreDNS a container runs, as its image tells.
type Build struct {
	// Image is the container's image as written ("" when not known: the model then judges as
	// CoreDNS v1.14.7, the version doctor's tables describe).
	Image string
	// Stock is true for a stock CoreDNS image whose tag names its version.
	Stock bool
	// Major, Minor, Patch are the version of a stock image.
	Major, Minor, Patch int
	// Gateway: the image is k8s_gateway's own CoreDNS build (ori-edge/k8s_gateway Dockerfile,
	// cmd/coredns.go: the stock directives with k8s_gateway in the kubernetes slot), which knows
	// the k8s_gateway directive; its other plugins and version are not told by the image.
	Gateway bool
}

// gatewayRepositories publish ori-edge/k8s_gateway's image (its README and chart values).
var gatewayRepositories = []string{"quay.io/oriedge/k8s_gateway", "oriedge/k8s_gateway"}

// ReadBuild reads an image reference: a stock repository with a version tag ("v1.11.1",
// "1.11.3") is that stock CoreDNS; anything else (another repository, a digest, "latest") is a
// build whose plugins and behaviour cannot be told.
func ReadBuild(image string) Build {
	b := Build{Image: image}
	ref := strings.TrimSpace(image)
	if ref == "" || strings.Contains(ref, "@") {
		return b
	}
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return b
	}
	repo, tag := strings.ToLower(ref[:i]), strings.TrimPrefix(ref[i+1:], "v")
	b.Gateway = slices.Contains(gatewayRepositories, repo)
	// a registry mirror of the project's image keeps its path (<registry>/coredns/coredns)
	stock := strings.HasSuffix(repo, "/coredns/coredns")
	for _, r := range stockRepositories {
		stock = stock || repo == r
	}
	parts := strings.Split(tag, ".")
	if !stock || len(parts) != 3 {
		return b
	}
	var v [3]int
	for k, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return b
		}
		v[k] = n
	}
	b.Stock, b.Major, b.Minor, b.Patch = true, v[0], v[1], v[2]
	return b
}

// Known reports whether the build's behaviour is known: a stock image of a read version, or no
// image at all (the model's own version).
func (b Build) Known() bool { return b.Image == "" || b.Stock }

// AtLeast reports whether a stock build is version major.minor.patch or later; a build with no
// image is v1.14.7.
func (b Build) AtLeast(major, minor, patch int) bool {
	if b.Image == "" {
		return true
	}
	have := [3]int{b.Major, b.Minor, b.Patch}
	want := [3]int{major, minor, patch}
	for i := range have {
		if have[i] != want[i] {
			return have[i] > want[i]
		}
	}
	return true
}

// Version is "v1.11.1" for a stock build, "" otherwise.
func (b Build) Version() string {
	if !b.Stock {
		return ""
	}
	return "v" + strconv.Itoa(b.Major) + "." + strconv.Itoa(b.Minor) + "." + strconv.Itoa(b.Patch)
}

// Build is the CoreDNS build the configuration is read as (Files.Build; none: v1.14.7).
func (c *Corefile) Build() Build {
	if c == nil || c.files == nil {
		return Build{}
	}
	return c.files.Build
}
