package faults

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/labctl"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
)

// Variants of the VPN's surroundings for issue 14's cases: return routes learnt by BGP, and a
// laptop whose client routes the cluster's ranges itself.

// AddReturnRoutesByBGP replaces the return routes with routes of protocol bird, as Calico's BGP
// daemon installs what its peers advertise (bird is protocol 12 in iproute2's rt_protos).
func (f Lab) AddReturnRoutesByBGP(ctx context.Context) error {
	vpn, err := labctl.VPNNode(f.Layout)
	if err != nil {
		return err
	}
	for _, h := range labctl.ReturnRouteHosts(f.Layout) {
		if _, err := netns.Run(ctx, h, "ip", "route", "replace", f.Layout.VPNPool, "via", vpn.LANIP, "proto", "bird"); err != nil {
			return err
		}
	}
	return nil
}

// SetLaptopClient restarts the laptop's OpenVPN client with extra configuration lines (none:
// the lab's own client) and waits until it has a tunnel address again.
func (f Lab) SetLaptopClient(ctx context.Context, extra ...string) error {
	mgr := labctl.Procs(f.Layout)
	if err := mgr.Stop(ctx, labctl.ProcLaptopVPN, "openvpn"); err != nil {
		return err
	}
	spec, err := labctl.LaptopSpec(f.Layout, extra...)
	if err != nil {
		return err
	}
	if _, _, err := mgr.Start(spec); err != nil {
		return err
	}
	return poll(ctx, 60*time.Second, func() error {
		out, err := netns.Run(ctx, f.Layout.Laptop.NS, "ip", "-4", "-o", "addr", "show", "dev", "tun0")
		if err != nil || !strings.Contains(out, "inet ") {
			return errors.Join(err, errors.New("the laptop's client has no tunnel address yet"))
		}
		return nil
	})
}
