package podruntime

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestRunnerForRecognisesTheImagesTheLabRuns(t *testing.T) {
	assert.IsType(t, corednsRunner{}, runnerFor("registry.k8s.io/coredns/coredns:v1.11.1"))
	assert.IsType(t, traefikRunner{}, runnerFor("docker.io/traefik:v3.1.2"))
	assert.IsType(t, openvpnRunner{}, runnerFor("docker.io/kylemanna/openvpn:2.4"))
	assert.IsType(t, httpEchoRunner{}, runnerFor("hashicorp/http-echo:1.0"))
	assert.Nil(t, runnerFor("docker.io/grafana/grafana:11.1.0"))
}

func TestFlagValueReadsBothSpellings(t *testing.T) {
	v, ok := flagValue([]string{"-conf", "/etc/coredns/Corefile"}, "conf")
	require.True(t, ok)
	assert.Equal(t, "/etc/coredns/Corefile", v)
	v, ok = flagValue([]string{"-listen=:5678"}, "listen")
	require.True(t, ok)
	assert.Equal(t, ":5678", v)
	_, ok = flagValue([]string{"conf"}, "conf")
	assert.False(t, ok)
}

func TestOpenVPNPoolReadsTheServerDirective(t *testing.T) {
	pool, err := openvpnPool("proto udp\nserver 10.8.0.0 255.255.255.0\n")
	require.NoError(t, err)
	assert.Equal(t, "10.8.0.0/24", pool)
	_, err = openvpnPool("client\n")
	assert.Error(t, err)
}

func TestCoreDNSPlanBindsThePodIPAndMapsTheMountedFiles(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Status.PodIP = "10.244.2.7"
	pc := &podContext{
		Pod:       pod,
		Container: corev1.Container{Name: "coredns", Args: []string{"-conf", "/etc/coredns/Corefile"}},
		Paths:     PathMap{{"/etc/coredns", "/s/vol/config"}, {"/etc/resolv.conf", "/s/resolv.conf"}},
		Files:     map[string][]byte{"/s/vol/config/Corefile": []byte(seedCorefile)},
	}
	p, err := corednsRunner{}.plan(pc)
	require.NoError(t, err)
	text := string(p.Files["/s/vol/config/Corefile"])
	assert.Contains(t, text, "bind 10.244.2.7")
	assert.Contains(t, text, "forward . /s/resolv.conf")
	assert.Equal(t, Signal, p.OnChange, "the seed's Corefile has reload")

	pc.Applied = "apps.example.com:1053 {\n  errors\n}\n"
	p, err = corednsRunner{}.plan(pc)
	require.NoError(t, err)
	assert.Equal(t, Ignore, p.OnChange, "a running config without reload never picks up a change")
}

func TestUnboundListsDeclaredPortsNothingListensOn(t *testing.T) {
	ss := "udp   UNCONN 0 0 10.244.2.1:1053 0.0.0.0:*\n" +
		"tcp   LISTEN 0 4096 10.244.2.1:1053 0.0.0.0:*\n" +
		"tcp   LISTEN 0 4096 0.0.0.0:8443 0.0.0.0:*\n" +
		"tcp   LISTEN 0 4096 10.244.2.9:5678 0.0.0.0:*\n"
	assert.Empty(t, unbound(ss, "10.244.2.1", []string{"udp 1053", "tcp 1053", "tcp 8443"}))
	assert.Equal(t, []string{"tcp 5678", "udp 53"}, unbound(ss, "10.244.2.1", []string{"tcp 5678", "udp 53"}),
		"another pod's socket does not count")
}

// k3s's pattern: a second ConfigMap volume nested under the first, whose *.server files the
// Corefile imports between its blocks. Each imported block must be bound to the pod IP like
// the Corefile's own (else CoreDNS opens a wildcard server beside the bound one and the pod
// IP's queries never reach the imported zone); files the glob does not match, and an import
// inside a block (plugin lines), are left as the volume has them.
func TestCoreDNSPlanBindsTheBlocksOfASecondConfigMapItImports(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Status.PodIP = "10.244.2.7"
	corefile := ".:1053 {\n    forward . /etc/resolv.conf\n    import /etc/coredns/custom/*.override\n}\nimport /etc/coredns/custom/*.server\n"
	zone := "apps.example.com:1053 {\n    template IN A {\n        answer \"{{ .Name }} 60 IN A 10.0.10.11\"\n    }\n}\n"
	override := "log\n"
	pc := &podContext{
		Pod:       pod,
		Container: corev1.Container{Name: "coredns", Args: []string{"-conf", "/etc/coredns/Corefile"}},
		Paths:     PathMap{{"/etc/coredns", "/s/vol/config"}, {"/etc/coredns/custom", "/s/vol/custom"}, {"/etc/resolv.conf", "/s/resolv.conf"}},
		Files: map[string][]byte{
			"/s/vol/config/Corefile":     []byte(corefile),
			"/s/vol/custom/lan.server":   []byte(zone),
			"/s/vol/custom/log.override": []byte(override),
		},
	}
	p, err := corednsRunner{}.plan(pc)
	require.NoError(t, err)
	assert.Contains(t, string(p.Files["/s/vol/config/Corefile"]), "import /s/vol/custom/*.server", "the import names the host path")
	assert.Equal(t, "apps.example.com:1053 {\n    bind 10.244.2.7\n    template IN A {", strings.Join(strings.Split(string(p.Files["/s/vol/custom/lan.server"]), "\n")[:3], "\n"))
	assert.Equal(t, 1, strings.Count(string(p.Files["/s/vol/custom/lan.server"]), "bind "), "one bind per block, none in the template")
	_, rewritten := p.Files["/s/vol/custom/log.override"]
	assert.False(t, rewritten, "plugin lines imported inside a block get no bind")
	assert.Contains(t, p.Applied, "template IN A", "what the process loads includes the imported block")
}

func TestTopLevelImportsSkipsImportsInsideBlocksSnippetsAndComments(t *testing.T) {
	text := "(snip) {\n  import a.conf\n}\n# import commented.server\nimport \"/x/*.server\"\n.:53 {\n  import /y/*.override\n}\nimport rel/*.server # k3s\n"
	assert.Equal(t, []string{"/x/*.server", "rel/*.server"}, TopLevelImports(text))
}
