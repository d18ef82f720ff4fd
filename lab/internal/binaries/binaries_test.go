package binaries

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseReadsBuildShOutput(t *testing.T) {
	s, err := Parse("etcd=/c/etcd-v3.7.3\ncoredns=/c/coredns-v1.14.7\nkwok=/c/kwok-v0.8.0\nkubernetes=/c/kubernetes-v1.37.2\ntraefik=/c/traefik-v3.7.9\ncni-plugins=/c/cni-plugins-v1.10.0\n" +
		"gateway-api=/c/gateway-api-v1.5.1\nkube-network-policies=/c/kube-network-policies-v0.8.0\n")
	require.NoError(t, err)
	assert.Equal(t, "/c/kubernetes-v1.37.2/kube-apiserver", s.APIServerBin())
	assert.Equal(t, "/c/kwok-v0.8.0/stages", s.KwokStagesDir())
	assert.Equal(t, "/c/traefik-v3.7.9/traefik", s.TraefikBin())
	assert.Equal(t, "/c/cni-plugins-v1.10.0", s.CNIPlugins)
	assert.Equal(t, "/c/gateway-api-v1.5.1/crds", s.GatewayAPICRDs())
	assert.Equal(t, "/c/kube-network-policies-v0.8.0/kube-network-policies", s.KubeNetworkPoliciesBin())
}

func TestParseNamesWhatBuildShDidNotReport(t *testing.T) {
	_, err := Parse("etcd=/c/etcd\n")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kubernetes")
}
