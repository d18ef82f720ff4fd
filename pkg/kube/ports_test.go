package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPortNumberTakesOnlyWhatTheAPIServerAdmits(t *testing.T) {
	for port, want := range map[int32]uint16{1: 1, 53: 53, 443: 443, 65535: 65535} {
		n, ok := PortNumber(port)
		assert.True(t, ok, "%d", port)
		assert.Equal(t, want, n)
	}
	for _, port := range []int32{0, -1, 65536, 65536 + 443, -65536 + 443} {
		_, ok := PortNumber(port)
		assert.False(t, ok, "%d is no port: converted, it would wrap onto another", port)
	}
}
