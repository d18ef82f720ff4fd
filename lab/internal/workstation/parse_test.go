package workstation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProfileOnReadsNmclisTerseEscapes(t *testing.T) {
	out := "lo:lo:loopback\nWired connection 1:eth0:802-3-ethernet\nvpn\\:office:tun0:tun\n"
	p, err := ProfileOn(out, "eth0")
	require.NoError(t, err)
	assert.Equal(t, "Wired connection 1", p)
	p, err = ProfileOn(out, "tun0")
	require.NoError(t, err)
	assert.Equal(t, "vpn:office", p)
	_, err = ProfileOn(out, "wlan0")
	assert.Error(t, err)
}

func TestQueryAddrsReadsTheLinkLines(t *testing.T) {
	out := "grafana.apps.example.com: 10.0.10.13                 -- link: eth0\n                          10.0.10.11                 -- link: eth0\n\n-- Information acquired via protocol DNS in 1.2ms.\n"
	assert.Equal(t, []string{"10.0.10.11", "10.0.10.13"}, QueryAddrs(out))
}
