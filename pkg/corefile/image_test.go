package corefile_test

import (
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/pkg/corefile"
)

func TestReadBuildKnowsOnlyStockImagesOfAVersion(t *testing.T) {
	for image, want := range map[string]string{
		"registry.k8s.io/coredns/coredns:v1.11.1":        "v1.11.1",
		"rancher/mirrored-coredns-coredns:1.11.3":        "v1.11.3",
		"coredns/coredns:1.14.3":                         "v1.14.3",
		"mirror.example.net:5000/coredns/coredns:1.12.0": "v1.12.0",
		"rancher/coredns-coredns:1.8.3":                  "v1.8.3",
		"ghcr.io/example/coredns-custom:1.11.1":          "",
		"quay.io/oriedge/k8s_gateway:v0.4.0":             "",
		"coredns/coredns:latest":                         "",
		"coredns/coredns@sha256:0123456789abcdef0":       "",
		"localhost:5000/coredns":                         "",
	} {
		b := corefile.ReadBuild(image)
		assert.Equal(t, want, b.Version(), image)
		assert.Equal(t, want != "", b.Known(), image)
	}
	assert.True(t, corefile.ReadBuild("").Known(), "no image: the model's own version")
}

// hosts reads `*.` entries as wildcards from v1.14.5 (coredns/coredns commit 6805f6f8a0df); an
// older stock CoreDNS reads them as literal names (SERVFAIL without fallthrough); a build that
// is not stock cannot be told. The v1.14.7 answer is the real binary's (testdata/corpus
// hosts-wildcard-on-older-coredns, coredns.yaml).
func TestHostsWildcardsAreJudgedByTheVersionThatRuns(t *testing.T) {
	const conf = "apps.example.com:1053 {\n    hosts {\n        10.0.10.11 *.apps.example.com\n        ttl 60\n    }\n}\n"
	ask := func(image string) corefile.Outcome {
		files := corefile.NewFiles()
		files.Build = corefile.ReadBuild(image)
		files.MountVolume("/etc/coredns", map[string]corefile.File{"Corefile": {Content: conf, Object: "ConfigMap lan-dns/lan-dns", Key: "Corefile"}})
		files.MountFile("/etc/hosts", corefile.File{Content: "127.0.0.1\tlocalhost\n", Object: "the kubelet's /etc/hosts", Key: "hosts"})
		cf, err := corefile.Load("Corefile", files, "/etc/coredns/Corefile")
		require.NoError(t, err)
		return cf.Query(corefile.Question{Name: "grafana.apps.example.com", Type: dns.TypeA, Port: "1053"})
	}
	o := ask("registry.k8s.io/coredns/coredns:v1.14.7")
	require.True(t, o.Known(), o.Describe())
	assert.Equal(t, "10.0.10.11", o.Addrs()[0].String())
	assert.Equal(t, uint32(60), o.Records[0].Header().Ttl)
	o = ask("registry.k8s.io/coredns/coredns:v1.11.1")
	require.True(t, o.Known(), o.Describe())
	assert.Equal(t, dns.RcodeServerFailure, o.Rcode)
	o = ask("quay.io/oriedge/k8s_gateway:v0.4.0")
	assert.False(t, o.Known())
	assert.Contains(t, o.Unknown, "quay.io/oriedge/k8s_gateway:v0.4.0")
}

// A stock build knows its version's plugin.cfg (docs/semantics.md 6.2): view from v1.10.0, shed
// from v1.14.7, federation until v1.7.0. Any other image may know more: cannot tell; k8s_gateway's
// image knows its own directive.
func TestABuildKnowsTheDirectivesOfItsVersion(t *testing.T) {
	for _, c := range []struct {
		image, dir string
		has, known bool
	}{
		{"registry.k8s.io/coredns/coredns:v1.9.3", "view", false, true},
		{"registry.k8s.io/coredns/coredns:v1.10.0", "view", true, true},
		{"coredns/coredns:1.14.3", "shed", false, true},
		{"coredns/coredns:1.6.9", "federation", true, true},
		{"coredns/coredns:1.7.0", "federation", false, true},
		{"coredns/coredns:1.14.7", "k8s_gateway", false, true},
		// k8s_gateway's own build registers it (ori-edge/k8s_gateway cmd/coredns.go)
		{"quay.io/oriedge/k8s_gateway:v0.4.0", "k8s_gateway", true, true},
		{"quay.io/oriedge/k8s_gateway:v0.4.0", "template", true, true},
	} {
		has, known := corefile.ReadBuild(c.image).KnowsDirective(c.dir)
		assert.Equal(t, [2]bool{c.has, c.known}, [2]bool{has, known}, "%s %s", c.image, c.dir)
	}
}
