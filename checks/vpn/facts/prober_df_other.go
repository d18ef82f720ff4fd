//go:build !linux

package facts

import (
	"context"
	"errors"
	"net/netip"
	"runtime"
)

// SendDF needs Linux's IP_MTU_DISCOVER to set Don't Fragment on a UDP socket.
func (NetProber) SendDF(context.Context, netip.AddrPort, int) (SizeResult, error) {
	return SizeResult{}, errors.New("Don't-Fragment probes from this machine need Linux (this is " + runtime.GOOS + ")")
}
