package workstation

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
	"github.com/lanaccess/kubectl-lanaccess/pkg/valid"
)

// DHCPConfig is the LAN's DHCP server: what gives a workstation its address and the network's
// own DNS servers, which the seed's zone servers are added before ("les serveurs ajoutés
// manuellement précèdent ceux du DHCP"). It is Debian's dnsmasq (dnsmasq-base, extracted with
// the workstation), DHCP only (no DNS: --port=0).
type DHCPConfig struct {
	Packages Packages
	// NetNS and Interface are where the server listens (another namespace on the same LAN).
	NetNS     string
	Interface string
	// First and Last bound the addresses handed out; PrefixLen is the LAN's.
	First, Last netip.Addr
	PrefixLen   int
	// Router is the default gateway offered (none when unset); DNS the network's resolvers; Domain the
	// domain name (option 15), which NetworkManager turns into a search domain.
	Router netip.Addr
	DNS    []netip.Addr
	Domain string
	// Routes are classless static routes (option 121), for a LAN without a default route: the
	// lab's laptop reaches its "internet" range through the router this way.
	Routes []Route
	// Lease is the lease time (default 1 h).
	Lease time.Duration
	// StateDir keeps the lease file and the pidfile (removed by Stop); LogDir the log.
	StateDir string
	LogDir   string
}

// Route is one static route: Dst through the gateway Via.
type Route struct {
	Dst netip.Prefix
	Via netip.Addr
}

// DHCPServer is a running DHCP server.
type DHCPServer struct {
	cfg   DHCPConfig
	procs procs.Manager
	pid   int
	done  <-chan struct{}
}

const procDHCP = "dhcp-dnsmasq"

func (c *DHCPConfig) args() ([]string, error) {
	if err := valid.InterfaceName(c.Interface); err != nil {
		return nil, fmt.Errorf("dhcp: %w", err)
	}
	if !c.First.Is4() || !c.Last.Is4() || c.Last.Less(c.First) || c.PrefixLen < 8 || c.PrefixLen > 30 {
		return nil, fmt.Errorf("dhcp: invalid range %s-%s/%d", c.First, c.Last, c.PrefixLen)
	}
	if c.Domain != "" {
		if err := valid.Hostname(c.Domain); err != nil {
			return nil, fmt.Errorf("dhcp: domain: %w", err)
		}
	}
	if c.Lease <= 0 {
		c.Lease = time.Hour
	}
	args := []string{
		c.Packages.Path("usr/sbin/dnsmasq"),
		// --no-daemon: no fork (its pid is ours), no pidfile, no change of user; stderr logging.
		// --no-ping: dnsmasq otherwise pings an address before its first lease, which made the
		// workstation's first start 3 to 5 s slower (1.4-1.7 s with it, load average 34).
		"--no-daemon", "--conf-file=/dev/null", "--port=0", "--no-ping", "--log-facility=-", "--log-dhcp",
		"--interface=" + c.Interface, "--bind-interfaces", "--dhcp-authoritative",
		"--dhcp-leasefile=" + filepath.Join(c.StateDir, "dnsmasq.leases"),
		fmt.Sprintf("--dhcp-range=%s,%s,%s,%ds", c.First, c.Last, netmask(c.PrefixLen), int(c.Lease.Seconds())),
	}
	if c.Router.IsValid() {
		args = append(args, "--dhcp-option=option:router,"+c.Router.String())
	} else {
		// dnsmasq offers its own address as the router unless option 3 is given empty
		// (dnsmasq(8), --dhcp-option): the lab's laptop got a default route without this.
		args = append(args, "--dhcp-option=option:router")
	}
	if len(c.DNS) > 0 {
		var dns []string
		for _, a := range c.DNS {
			dns = append(dns, a.String())
		}
		args = append(args, "--dhcp-option=option:dns-server,"+strings.Join(dns, ","))
	}
	if c.Domain != "" {
		args = append(args, "--dhcp-option=option:domain-name,"+c.Domain)
	}
	if len(c.Routes) > 0 {
		var parts []string
		for _, r := range c.Routes {
			if !r.Dst.Addr().Is4() || !r.Via.Is4() {
				return nil, fmt.Errorf("dhcp: route %s via %s: IPv4 only", r.Dst, r.Via)
			}
			parts = append(parts, r.Dst.Masked().String(), r.Via.String())
		}
		args = append(args, "--dhcp-option=option:classless-static-route,"+strings.Join(parts, ","))
	}
	return args, nil
}

func netmask(bits int) string {
	var mask [4]byte
	for i := range bits {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	return netip.AddrFrom4(mask).String()
}

// StartDHCP starts the server and returns once it is listening.
func StartDHCP(ctx context.Context, cfg DHCPConfig) (*DHCPServer, error) {
	args, err := cfg.args()
	if err != nil {
		return nil, err
	}
	if cfg.StateDir == "" || cfg.LogDir == "" {
		return nil, errors.New("dhcp: StateDir and LogDir are required")
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, err
	}
	d := &DHCPServer{cfg: cfg, procs: procs.Manager{PidDir: cfg.StateDir, LogDir: cfg.LogDir}}
	pid, done, err := d.procs.Start(procs.Spec{Name: procDHCP, NS: cfg.NetNS, Dir: "/", Argv: args,
		Env: []string{"LD_LIBRARY_PATH=" + cfg.Packages.libraryPath()}})
	if err != nil {
		return nil, fmt.Errorf("dhcp: %w", err)
	}
	d.pid, d.done = pid, done
	// dnsmasq logs "DHCP, sockets bound exclusively to interface" once it listens.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		select {
		case <-done:
			return false, errors.New("dnsmasq exited")
		default:
		}
		log, _ := os.ReadFile(d.procs.LogFile(procDHCP))
		return strings.Contains(string(log), "sockets bound exclusively to interface"), nil
	})
	if err != nil {
		stopErr := d.Stop(context.WithoutCancel(ctx))
		return nil, errors.Join(fmt.Errorf("dhcp: waiting for dnsmasq: %w\n%s", err, logTail(d.procs.LogFile(procDHCP), 10)), stopErr)
	}
	return d, nil
}

// Pid is the server's process.
func (d *DHCPServer) Pid() int { return d.pid }

// Stop ends the server by its pid and removes its state directory.
func (d *DHCPServer) Stop(ctx context.Context) error {
	select {
	case <-d.done: // already ended (CleanupDHCP): its pid may belong to another process now
		return os.RemoveAll(d.cfg.StateDir)
	default:
	}
	err := procs.Terminate(ctx, d.pid)
	select {
	case <-d.done:
	case <-ctx.Done():
		err = errors.Join(err, ctx.Err())
	}
	return errors.Join(err, os.RemoveAll(d.cfg.StateDir))
}

// CleanupDHCP ends the server a crashed caller left (its pidfile in stateDir, checked against
// its command line) and removes stateDir: what `lab down` does.
func CleanupDHCP(ctx context.Context, stateDir string) error {
	err := procs.Manager{PidDir: stateDir}.Stop(ctx, procDHCP, "dnsmasq")
	return errors.Join(err, os.RemoveAll(stateDir))
}

// String describes the server for logs.
func (d *DHCPServer) String() string {
	return "dnsmasq " + d.cfg.Packages.Versions["dnsmasq-base"] + " (pid " + strconv.Itoa(d.pid) + ") in " + d.cfg.NetNS
}

// DHCPPid is the pid of the server a StartDHCP with stateDir left running (its pidfile,
// checked against its command line); ok is false when none runs.
func DHCPPid(stateDir string) (pid int, ok bool) {
	return procs.Manager{PidDir: stateDir}.Pid(procDHCP, "dnsmasq")
}
