package podruntime

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/binaries"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// Cluster is what runners read from the API (through the daemon's informer caches).
type Cluster interface {
	Sources
}

// ChangePolicy says what the real container does when its configuration files change.
type ChangePolicy int

const (
	// Restart: the process only reads its config at start (the lab restarts it, as a rollout
	// would).
	Restart ChangePolicy = iota
	// Signal: the process reloads on a signal (CoreDNS's reload on SIGUSR1).
	Signal
	// Ignore: nothing in the container notices (CoreDNS without the reload plugin).
	Ignore
)

// plan is how to run one container.
type plan struct {
	Argv     []string
	Match    string // a substring of the process's command line that identifies it
	OnChange ChangePolicy
	Sig      syscall.Signal
	// Files are written before start/reload; keys are host paths.
	Files map[string][]byte
	// Applied is the config text this plan loads, kept to decide later reload behaviour.
	Applied string
	// OnStart runs in the pod's node namespace after the process started (what the image's
	// entrypoint does besides exec'ing the daemon, e.g. OpenVPN's masquerade rule).
	OnStart func(ctx context.Context) error
}

// podContext is what a runner gets for one container.
type podContext struct {
	Pod       *corev1.Pod
	Node      layout.Node
	Dir       string
	Container corev1.Container
	Paths     PathMap
	Files     map[string][]byte
	Layout    layout.Layout
	Bins      binaries.Set
	Cluster   Cluster
	// Applied is the config text the running process loaded ("" if not running).
	Applied string
	// Exec runs a command in the namespace the container's processes run in (the pod's own, or
	// its node's).
	Exec func(ctx context.Context, argv ...string) (string, error)
	// OwnNamespace is set when the pod has a network namespace of its own; RouteToPod then
	// routes prefixes from its node to it.
	OwnNamespace bool
	RouteToPod   func(ctx context.Context, prefixes ...string) error
	// Token is a token of the pod's ServiceAccount, bound to the pod (nil: none).
	Token func(ctx context.Context) ([]byte, error)
}

type runner interface {
	plan(pc *podContext) (*plan, error)
}

// runnerFor picks the stand-in for a container image; nil = the lab runs nothing for it (the
// pod is Running in the API but serves nothing, like a container that ignores its port).
func runnerFor(image string) runner {
	repo := image
	if i := strings.LastIndex(repo, "/"); i >= 0 {
		repo = repo[i+1:]
	}
	repo, _, _ = strings.Cut(repo, ":")
	switch {
	case repo == "coredns":
		return corednsRunner{}
	case repo == "traefik":
		return traefikRunner{}
	case strings.Contains(repo, "openvpn"):
		return openvpnRunner{}
	case repo == "http-echo":
		return httpEchoRunner{}
	case repo == "forward-auth":
		return forwardAuthRunner{}
	}
	return nil
}

// containerArgs is command followed by args, the full argv the container would run.
func containerArgs(c corev1.Container) []string {
	return append(append([]string{}, c.Command...), c.Args...)
}

// flagValue finds "-name v", "-name=v", "--name v" or "--name=v" in args.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		trimmed := strings.TrimLeft(a, "-")
		if trimmed == a {
			continue
		}
		if trimmed == name && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(trimmed, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// configFile returns the host path and content of the container's config file (a volume key).
func configFile(pc *podContext, containerPath string) (string, string, error) {
	host, ok := pc.Paths.Resolve(containerPath)
	if !ok {
		return "", "", fmt.Errorf("container %s: %s is not on a mounted volume", pc.Container.Name, containerPath)
	}
	raw, ok := pc.Files[host]
	if !ok {
		return "", "", fmt.Errorf("container %s: %s is missing from its volume", pc.Container.Name, containerPath)
	}
	return host, string(raw), nil
}

type corednsRunner struct{}

func (corednsRunner) plan(pc *podContext) (*plan, error) {
	conf, ok := flagValue(containerArgs(pc.Container), "conf")
	if !ok {
		conf = "/etc/coredns/Corefile"
	}
	host, raw, err := configFile(pc, conf)
	if err != nil {
		return nil, err
	}
	text := BindCorefile(pc.Paths.Rewrite(raw), pc.Pod.Status.PodIP)
	p := &plan{
		Argv:    []string{pc.Bins.CoreDNSBin(), "-conf", host},
		Match:   host,
		Files:   map[string][]byte{host: []byte(text)},
		Applied: text,
	}
	imported := importedBlocks(host, text, pc.Files, pc.Paths, pc.Pod.Status.PodIP)
	for _, name := range slices.Sorted(maps.Keys(imported)) {
		p.Files[name] = imported[name]
		p.Applied += "\n" + string(imported[name])
	}
	// CoreDNS re-reads its Corefile only through the reload plugin of the configuration it is
	// running; SIGUSR1 does the same reload now instead of at the plugin's next 30 s tick.
	if pc.Applied == "" || HasDirective(pc.Applied, "reload") {
		p.OnChange, p.Sig = Signal, syscall.SIGUSR1
	} else {
		p.OnChange = Ignore
	}
	return p, nil
}

type openvpnRunner struct{}

func (openvpnRunner) plan(pc *podContext) (*plan, error) {
	conf, ok := flagValue(containerArgs(pc.Container), "config")
	if !ok {
		conf = "/etc/openvpn/openvpn.conf"
	}
	host, raw, err := configFile(pc, conf)
	if err != nil {
		return nil, err
	}
	text := pc.Paths.Rewrite(raw)
	pool, err := openvpnPool(text)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", pc.Container.Name, err)
	}
	comment := PodRuleComment(pc.Pod)
	argv := []string{"openvpn", "--config", host}
	if !pc.OwnNamespace {
		// In its own pod namespace OpenVPN's wildcard socket only has the pod IP; in its node's
		// the namespace also has the node's LAN address, and a wildcard socket would answer
		// DNAT'ed clients from that address, which conntrack cannot match to the flow.
		argv = append(argv, "--local", pc.Pod.Status.PodIP)
	}
	return &plan{
		Argv:     argv,
		Match:    host,
		OnChange: Restart,
		Files:    map[string][]byte{host: []byte(text)},
		Applied:  text,
		// kylemanna/openvpn's entrypoint masquerades the client pool out of eth0, so that
		// replies from the pod network come back to the pod without a route to the pool.
		// In its own namespace, the node routes the pool to the pod: the lab's return routes
		// (the other nodes send the pool to this node) end there.
		OnStart: func(ctx context.Context) error {
			spec := []string{"POSTROUTING", "-s", pool, "-o", "eth0", "-m", "comment", "--comment", comment, "-j", "MASQUERADE"}
			if _, err := pc.Exec(ctx, append([]string{"iptables", "-t", "nat", "-C"}, spec...)...); err != nil {
				add := append([]string{"iptables", "-t", "nat", "-A"}, spec...)
				if _, err := pc.Exec(ctx, add...); err != nil {
					return err
				}
			}
			if pc.RouteToPod != nil {
				return pc.RouteToPod(ctx, pool)
			}
			return nil
		},
	}, nil
}

// openvpnPool reads "server NETWORK NETMASK" from an OpenVPN config as a CIDR.
func openvpnPool(conf string) (string, error) {
	for line := range strings.SplitSeq(conf, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == "server" {
			addr, err := netip.ParseAddr(f[1])
			if err != nil {
				return "", fmt.Errorf("server directive: %w", err)
			}
			mask, err := netip.ParseAddr(f[2])
			if err != nil {
				return "", fmt.Errorf("server directive: %w", err)
			}
			bits := 0
			for _, b := range mask.AsSlice() {
				for ; b != 0; b <<= 1 {
					bits++
				}
			}
			return netip.PrefixFrom(addr, bits).Masked().String(), nil
		}
	}
	return "", fmt.Errorf("no server directive: not a server config")
}

type httpEchoRunner struct{}

func (httpEchoRunner) plan(pc *podContext) (*plan, error) {
	args := containerArgs(pc.Container)
	listen, ok := flagValue(args, "listen")
	if !ok {
		listen = ":5678"
	}
	_, port, found := strings.Cut(listen, ":")
	if !found {
		return nil, fmt.Errorf("container %s: -listen %q has no port", pc.Container.Name, listen)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return nil, fmt.Errorf("container %s: -listen %q: %w", pc.Container.Name, listen, err)
	}
	text, _ := flagValue(args, "text")
	addr := pc.Pod.Status.PodIP + ":" + port
	return &plan{
		Argv:     []string{pc.Layout.LabBinary(), "serve-http", "--listen", addr, "--text", text},
		Match:    "serve-http --listen " + addr,
		OnChange: Restart,
		Applied:  addr + " " + text,
	}, nil
}

// PodRuleComment tags iptables rules a pod's container added, so they go away with the pod.
func PodRuleComment(pod *corev1.Pod) string { return "lab-pod:" + string(pod.UID) }
