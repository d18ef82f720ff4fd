package labctl

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/workstation"
)

// The laptop is a real Linux workstation (lab/internal/workstation): Debian's NetworkManager
// and systemd-resolved in its network namespace, its LAN interface on DHCP from the
// "internet" namespace (the organisation's router, 10.0.10.254), whose DHCP server (Debian's
// dnsmasq) hands out the laptop's own address, the organisation's resolver and the route to
// it. The seed's Linux client setup (client-config) and its failover then run on the real
// programs.

// WorkstationProfile is the laptop's NetworkManager connection profile, as a desktop names
// the first wired one.
const WorkstationProfile = "Wired connection 1"

// WorkstationStateDir and DHCPStateDir are the workstation's and the DHCP server's state
// (pidfiles, private /run, leases) under the lab's state directory.
func WorkstationStateDir(l layout.Layout) string { return l.Path("workstation") }

// DHCPStateDir is the DHCP server's state directory (pidfile, leases).
func DHCPStateDir(l layout.Layout) string { return l.Path("dhcp") }

// LaptopInterface is the laptop's LAN interface (netns.ConnectToBridge names it eth0).
const LaptopInterface = "eth0"

// WorkstationConfig is the laptop's workstation as lab up starts it; Attach with it finds the
// running one.
func WorkstationConfig(l layout.Layout, pkgs workstation.Packages) workstation.Config {
	return workstation.Config{
		Packages: pkgs, NetNS: l.Laptop.NS, Interface: LaptopInterface, Profile: WorkstationProfile,
		IPv4: workstation.IPv4{Method: "auto"},
		// The dual-stack variant adds the laptop's IPv6 address itself (faults.SetDualStack).
		IPv6Method: "ignore",
		StateDir:   WorkstationStateDir(l), LogDir: filepath.Join(l.LogDir(), "workstation"),
	}
}

// dhcpConfig is the LAN's DHCP server in the "internet" namespace, on its LAN side. The range
// is the laptop's one address, so the laptop keeps the address the rest of the lab knows
// (layout.Laptop.LANIP). No default router: nothing in the lab has a default route. The
// network's DNS server is the organisation's resolver (layout.InternetDNS, which answers the
// zone with the public, VPN-only address), reached over the LAN through two classless static
// routes: the internet range, and the resolver's own address. The VPN pushes the same /24 (and
// openvpn installs it with metric 0, before NetworkManager's 100): the /32 keeps the resolver on
// the LAN, as an organisation's resolver is, whether or not the tunnel works.
func dhcpConfig(l layout.Layout, pkgs workstation.Packages) (workstation.DHCPConfig, error) {
	laptop, err := netip.ParseAddr(l.Laptop.LANIP)
	if err != nil {
		return workstation.DHCPConfig{}, err
	}
	router, err := netip.ParseAddr(l.Internet.LANIP)
	if err != nil {
		return workstation.DHCPConfig{}, err
	}
	resolver, err := netip.ParseAddr(l.InternetDNS)
	if err != nil {
		return workstation.DHCPConfig{}, err
	}
	internet, err := netip.ParsePrefix(l.InternetCIDR)
	if err != nil {
		return workstation.DHCPConfig{}, err
	}
	var bits int
	if _, err := fmt.Sscan(l.BridgeCIDR, &bits); err != nil {
		return workstation.DHCPConfig{}, fmt.Errorf("LAN prefix length %q: %w", l.BridgeCIDR, err)
	}
	return workstation.DHCPConfig{
		Packages: pkgs, NetNS: l.Internet.NS, Interface: "eth0",
		First: laptop, Last: laptop, PrefixLen: bits,
		DNS: []netip.Addr{resolver}, Domain: "lan",
		Routes: []workstation.Route{
			{Dst: internet, Via: router},
			{Dst: netip.PrefixFrom(resolver, 32), Via: router},
		},
		StateDir: DHCPStateDir(l), LogDir: l.LogDir(),
	}, nil
}

// laptopResolvConf is what programs started with `ip netns exec laptop` read as
// /etc/resolv.conf: systemd-resolved's stub in the laptop's namespace, as on a desktop where
// /etc/resolv.conf links to /run/systemd/resolve/stub-resolv.conf. Lookups of every program on
// the laptop (the plugin's LA402 among them) then go through resolved.
const laptopResolvConf = "# written by kubectl-lanaccess lab: the laptop's systemd-resolved stub\nnameserver 127.0.0.53\noptions edns0 trust-ad\n"

// startWorkstation starts the DHCP server, then the workstation, and points the laptop's
// resolv.conf at resolved. It records how long the workstation took to start.
func (b *bringUp) startWorkstation(ctx context.Context) error {
	pkgs, err := workstation.BuildPackages(ctx, b.o.LabDir, b.o.Out)
	if err != nil {
		return err
	}
	b.st.WorkstationPackages = pkgs.Dir
	dcfg, err := dhcpConfig(b.l, pkgs)
	if err != nil {
		return err
	}
	if _, err := workstation.StartDHCP(ctx, dcfg); err != nil {
		return err
	}
	start := time.Now()
	if _, err := workstation.Start(ctx, WorkstationConfig(b.l, pkgs)); err != nil {
		return err
	}
	b.st.WorkstationStart = time.Since(start).Round(10 * time.Millisecond).String()
	path := filepath.Join(layout.ResolvConfDir(b.l.Laptop.NS), "resolv.conf")
	if err := os.WriteFile(path, []byte(laptopResolvConf), 0o644); err != nil { //nolint:gosec // resolv.conf: every process in the namespace reads it, whatever its user
		return err
	}
	return SaveState(b.l, b.st)
}

// AttachWorkstation returns the laptop's running workstation.
func AttachWorkstation(l layout.Layout) (*workstation.Workstation, error) {
	st, err := LoadState(l)
	if err != nil {
		return nil, err
	}
	if st.WorkstationPackages == "" {
		return nil, errors.New("the lab state names no workstation packages (a lab from before the workstation: lab down, lab up)")
	}
	pkgs, err := workstation.LoadPackages(st.WorkstationPackages)
	if err != nil {
		return nil, err
	}
	return workstation.Attach(WorkstationConfig(l, pkgs))
}

// workstationHealthy: the DHCP server and every process of the workstation run.
func workstationHealthy(l layout.Layout) error {
	if _, ok := workstation.DHCPPid(DHCPStateDir(l)); !ok {
		return fmt.Errorf("the LAN's DHCP server is not running (log: %s)", filepath.Join(l.LogDir(), "dhcp-dnsmasq.log"))
	}
	_, err := AttachWorkstation(l)
	return err
}

// stopWorkstation ends the workstation and the DHCP server (from their pidfiles: it works
// after a crash) and removes their state.
func stopWorkstation(ctx context.Context, l layout.Layout) error {
	return errors.Join(workstation.Cleanup(ctx, WorkstationStateDir(l)), workstation.CleanupDHCP(ctx, DHCPStateDir(l)))
}

// workstationStatus is the status line of the laptop's workstation: its versions, the
// profile's state, and the server resolved asks on the laptop's link.
func workstationStatus(ctx context.Context, l layout.Layout) string {
	w, err := AttachWorkstation(l)
	if err != nil {
		return "workstation: NOT RUNNING (" + err.Error() + ")"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	state, err := w.Run(ctx, "nmcli", "-g", "GENERAL.STATE", "connection", "show", WorkstationProfile)
	profile := strings.TrimSpace(string(state))
	if err != nil {
		profile = "unknown (" + err.Error() + ")"
	}
	server := "none"
	if out, err := w.Run(ctx, "resolvectl", "status", "--no-pager", LaptopInterface); err == nil {
		for line := range strings.SplitSeq(string(out), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Current DNS Server:"); ok {
				server = strings.TrimSpace(v)
			}
		}
	}
	dhcp := "DHCP server NOT RUNNING"
	if pid, ok := workstation.DHCPPid(DHCPStateDir(l)); ok {
		dhcp = fmt.Sprintf("DHCP from dnsmasq (pid %d) in %s", pid, l.Internet.NS)
	}
	return fmt.Sprintf("workstation: %s in %s (%s); profile %q on %s %s, current DNS server %s; %s",
		w.Config().Packages.Describe(), l.Laptop.NS, pidList(w.Pids()), WorkstationProfile, LaptopInterface, profile, server, dhcp)
}

func pidList(pids map[string]int) string {
	var parts []string
	for _, name := range []string{"NetworkManager", "systemd-resolved", "dbus-daemon"} {
		if pid, ok := pids[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", name, pid))
		}
	}
	return strings.Join(parts, ", ")
}
