package vpn

import (
	"fmt"
	"strings"

	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
)

// The Don't-Fragment sweeps of the hop ladders (VPN006 from the pod, VPN007 from this
// machine), as VPN008's verdict quotes them.

// mtuSizes lists a sweep's sizes and outcomes.
func mtuSizes(m facts.MTUProbe) string {
	out := make([]string, 0, len(m.Sizes))
	for _, s := range m.Sizes {
		out = append(out, fmt.Sprintf("%d %s", s.Size, s.State))
	}
	return strings.Join(out, ", ")
}
