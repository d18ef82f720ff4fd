package kubeproxy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

func TestConfigIsWhatANodeRunsWithTheLabsPodCIDRAndLoopbackEndpoints(t *testing.T) {
	l := layout.Default()
	var cfg map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(Config(l, "node-2", NFTables, "/k/kube-proxy.kubeconfig")), &cfg))
	assert.Equal(t, "KubeProxyConfiguration", cfg["kind"])
	assert.Equal(t, "nftables", cfg["mode"])
	assert.Equal(t, "node-2", cfg["hostnameOverride"])
	assert.Equal(t, l.ClusterPodCIDR, cfg["clusterCIDR"])
	assert.Equal(t, map[string]any{"kubeconfig": "/k/kube-proxy.kubeconfig"}, cfg["clientConnection"])
	assert.Equal(t, map[string]any{"maxPerCore": float64(0)}, cfg["conntrack"])
	assert.Equal(t, "127.0.0.1:10249", cfg["metricsBindAddress"])
	assert.NotContains(t, cfg, "iptables", "masqueradeAll stays kube-proxy's default (false)")
}

func TestParseModeRefusesIPVS(t *testing.T) {
	m, err := ParseMode("nftables")
	require.NoError(t, err)
	assert.Equal(t, NFTables, m)
	_, err = ParseMode("ipvs")
	assert.ErrorContains(t, err, "ip_vs")
	_, err = ParseMode("userspace")
	assert.Error(t, err)
}

const metrics = `# HELP kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds [ALPHA] The last time a sync of proxy rules was queued
# TYPE kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds gauge
kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family="IPv4"} 1.7650000105e+09
kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family="IPv6"} 1.765000001e+09
# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge
kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1.76500001e+09
kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv6"} 1.765000002e+09
kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"} 12
`

func TestSyncedWaitsForEveryQueuedChangeAndForEventsToArrive(t *testing.T) {
	s, err := ParseMetrics(metrics)
	require.NoError(t, err)
	assert.Equal(t, []string{"IPv4"}, s.Pending(), "IPv4 queued at …10.5, synced at …10")
	now := time.Unix(1765000100, 0)
	assert.Error(t, Synced(s, now.Add(-time.Minute), now))
	s.Synced["IPv4"] = 1765000011
	assert.NoError(t, Synced(s, now.Add(-time.Minute), now))
	assert.Error(t, Synced(s, now, now), "a change made just now may not have been queued yet")
	assert.Equal(t, []string{"no sync yet"}, Sync{}.Pending())
}
