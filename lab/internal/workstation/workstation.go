// Package workstation runs a real Linux workstation's name resolution in a network namespace:
// Debian 12's own dbus-daemon, systemd-resolved and NetworkManager, extracted from their .deb
// files by `lab/build.sh workstation` (never installed: systemd-resolved's postinst would take
// over this machine's resolver), each started directly, without systemd as PID 1.
//
// They run in a private mount namespace (one "holder" process keeps it) where StateDir/run is
// /run, /var/lib is an overlay whose writes stay in StateDir, /etc/passwd and /etc/group are
// copies with the users the daemons need, /etc/resolv.conf points at resolved's stub and /sys is
// read-only (NetworkManager then works without udev). NetworkManager manages only the given
// interface, with one keyfile connection profile, and hands DNS to systemd-resolved over the
// private system bus. Run executes any command (nmcli, resolvectl, the plugin) in that mount and
// network namespace, so the seed's commands run verbatim. The recipe is LAB-NOTES "Added turn 3".
package workstation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
	"github.com/lanaccess/kubectl-lanaccess/pkg/valid"
)

// Config describes one workstation.
type Config struct {
	Packages Packages
	// NetNS is the network namespace (ip netns name) and Interface its LAN interface, which
	// NetworkManager manages (the only one it does).
	NetNS     string
	Interface string
	// Profile is the connection profile's name (NetworkManager's connection.id).
	Profile string
	IPv4    IPv4
	// IPv6Method is the profile's ipv6.method: "disabled" (the default: NetworkManager turns
	// IPv6 off on the interface) or "ignore" (NetworkManager leaves the interface's IPv6 to
	// others, as the lab's dual-stack variant needs).
	IPv6Method string
	// StateDir holds the private /run, the overlay of /var/lib, the configuration and the
	// pidfiles; Stop removes it. It must not exist yet, or be empty.
	StateDir string
	// LogDir receives one log per daemon (dbus-daemon.log, systemd-resolved.log,
	// NetworkManager.log); it is kept after Stop.
	LogDir string
	// Debug makes systemd-resolved and NetworkManager log at debug level (resolved then logs
	// each server switch: "Switching to DNS server ...").
	Debug bool
	// Timeout bounds Start (default 60 s) on top of ctx.
	Timeout time.Duration
}

// The processes of a workstation, by pidfile name, and the text their command line holds (a
// later Cleanup never signals a process that reused a pid).
const (
	procHolder   = "workstation-holder"
	procDBus     = "dbus-daemon"
	procResolved = "systemd-resolved"
	procNM       = "NetworkManager"
	// holderName is the holder's argv[0] (bash's exec -a), unique to it.
	holderName = "kubectl-lanaccess-workstation-holder"
)

var processMatch = map[string]string{
	procHolder:   holderName,
	procDBus:     "dbus-daemon",
	procResolved: "systemd-resolved",
	procNM:       "NetworkManager",
}

// stopOrder ends NetworkManager first (it talks to resolved and the bus), the holder last.
var stopOrder = []string{procNM, procResolved, procDBus, procHolder}

// Workstation is a running workstation.
type Workstation struct {
	cfg     Config
	procs   procs.Manager
	running map[string]process
	// mountNS is the holder's mount namespace ("mnt:[inode]"), which every process of the
	// workstation shares.
	mountNS string
}

type process struct {
	pid  int
	done <-chan struct{}
}

func (c *Config) validate() error {
	if c.Packages.Dir == "" {
		return errors.New("workstation: no packages (lab/build.sh workstation)")
	}
	if c.NetNS == "" || strings.ContainsAny(c.NetNS, "/\x00") {
		return fmt.Errorf("workstation: invalid network namespace %q", c.NetNS)
	}
	if err := valid.InterfaceName(c.Interface); err != nil {
		return fmt.Errorf("workstation: %w", err)
	}
	if c.Profile == "" {
		c.Profile = "Wired connection 1"
	}
	if strings.ContainsAny(c.Profile, "\n\r\x00") {
		return fmt.Errorf("workstation: profile name %q holds a line break or NUL", c.Profile)
	}
	switch c.IPv4.Method {
	case "", "auto":
		c.IPv4.Method = "auto"
	case "manual":
		if !c.IPv4.Address.IsValid() {
			return errors.New("workstation: a manual profile needs an address")
		}
	default:
		return fmt.Errorf("workstation: IPv4 method %q: use auto or manual", c.IPv4.Method)
	}
	switch c.IPv6Method {
	case "":
		c.IPv6Method = "disabled"
	case "disabled", "ignore":
	default:
		return fmt.Errorf("workstation: IPv6 method %q: use disabled or ignore", c.IPv6Method)
	}
	for _, d := range c.IPv4.DNSSearch {
		if strings.ContainsAny(d, ";\n\r\x00 ") {
			return fmt.Errorf("workstation: invalid DNS search domain %q", d)
		}
	}
	if c.StateDir == "" || c.LogDir == "" {
		return errors.New("workstation: StateDir and LogDir are required")
	}
	for _, dir := range []string{c.StateDir, c.Packages.Dir} {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return err
		}
		if abs == "/var/lib" || strings.HasPrefix(abs, "/var/lib/") {
			return fmt.Errorf("workstation: %s is under /var/lib, which the workstation overlays", dir)
		}
	}
	if abs, _ := filepath.Abs(c.Packages.Dir); strings.HasPrefix(abs, "/run/") {
		return fmt.Errorf("workstation: the packages (%s) must not be under /run, which the workstation replaces", c.Packages.Dir)
	}
	if c.Timeout <= 0 {
		c.Timeout = 60 * time.Second
	}
	return nil
}

// Start prepares the state directory, starts the holder of the mount namespace, the system
// bus, systemd-resolved and NetworkManager, and returns once NetworkManager has activated the
// profile on the interface. On error, whatever was started is stopped again.
func Start(ctx context.Context, cfg Config) (*Workstation, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join("/run/netns", cfg.NetNS)); err != nil {
		return nil, fmt.Errorf("workstation: network namespace %s: %w", cfg.NetNS, err)
	}
	// The interface starts as at boot, down and without addresses: NetworkManager "assumes" an
	// interface it finds configured, with a generated in-memory profile instead of ours.
	for _, argv := range [][]string{
		{"ip", "-n", cfg.NetNS, "link", "set", cfg.Interface, "down"},
		{"ip", "-n", cfg.NetNS, "addr", "flush", "dev", cfg.Interface},
	} {
		if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil { //nolint:gosec // fixed ip commands on validated names
			return nil, fmt.Errorf("workstation: %s: %w: %s", strings.Join(argv, " "), err, out)
		}
	}
	if err := prepareState(cfg); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	w := &Workstation{
		cfg:     cfg,
		procs:   procs.Manager{PidDir: filepath.Join(cfg.StateDir, "pids"), LogDir: cfg.LogDir},
		running: map[string]process{},
	}
	if err := w.start(ctx); err != nil {
		stopCtx, stopCancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer stopCancel()
		return nil, errors.Join(err, w.Stop(stopCtx))
	}
	return w, nil
}

func (w *Workstation) start(ctx context.Context) error {
	cfg, pkgs := w.cfg, w.cfg.Packages
	// The holder: every mount, then a sleep that keeps the namespace for the daemons.
	if err := w.launch(procHolder, procs.Spec{Name: procHolder, NS: cfg.NetNS, Dir: "/",
		Argv: []string{"unshare", "--mount", "--propagation", "private", "--", "bash", "-c", holderScript, "holder", cfg.StateDir}}); err != nil {
		return err
	}
	if err := w.waitFor(ctx, procHolder, "its mounts", func(context.Context) (bool, error) {
		_, err := os.Stat(w.hostPath(readyFile))
		return err == nil, nil
	}); err != nil {
		return err
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", w.running[procHolder].pid))
	if err != nil {
		return fmt.Errorf("workstation: mount namespace of the holder: %w", err)
	}
	w.mountNS = ns

	if err := w.launchInside(procDBus, nil, pkgs.Path("usr/bin/dbus-daemon"), "--nofork", "--nopidfile", "--nosyslog", "--config-file="+confDir+"/dbus.conf"); err != nil {
		return err
	}
	if err := w.waitFor(ctx, procDBus, "the system bus socket", func(context.Context) (bool, error) {
		_, err := os.Stat(w.hostPath(busSocket))
		return err == nil, nil
	}); err != nil {
		return err
	}

	var resolvedEnv []string
	if cfg.Debug {
		resolvedEnv = append(resolvedEnv, "SYSTEMD_LOG_LEVEL=debug")
	}
	if err := w.launchInside(procResolved, resolvedEnv, pkgs.Path("lib/systemd/systemd-resolved")); err != nil {
		return err
	}
	if err := w.waitFor(ctx, procResolved, "org.freedesktop.resolve1 on the bus", func(ctx context.Context) (bool, error) {
		_, err := w.Run(ctx, "resolvectl", "status", "--no-pager")
		return err == nil, nil
	}); err != nil {
		return err
	}

	if err := w.launchInside(procNM, nil, pkgs.Path("usr/sbin/NetworkManager"), "--debug",
		"--config="+confDir+"/NetworkManager.conf", "--config-dir="+confDir+"/conf.d"); err != nil {
		return err
	}
	return w.waitFor(ctx, procNM, "the profile "+strconv.Quote(cfg.Profile)+" activated on "+cfg.Interface, func(ctx context.Context) (bool, error) {
		out, err := w.Run(ctx, "nmcli", "-g", "GENERAL.STATE", "connection", "show", cfg.Profile)
		return err == nil && strings.TrimSpace(string(out)) == "activated", nil
	})
}

// holderScript runs in the new mount namespace (propagation private, so nothing reaches the
// machine's mounts); $1 is the state directory.
const holderScript = `set -euo pipefail
state=$1
mount --bind "$state/etc/passwd" /etc/passwd
mount --bind "$state/etc/group" /etc/group
mount --bind "$state/etc/resolv.conf" /etc/resolv.conf
# overlay's options are comma-separated: relative paths (from $state/var-lib) keep a state
# directory whose path holds a comma working.
(cd "$state/var-lib" && mount -t overlay overlay -o lowerdir=/var/lib,upperdir=upper,workdir=work /var/lib)
mount --bind "$state/run" /run
mount -o remount,ro,bind /sys
: > ` + readyFile + `
exec -a ` + holderName + ` sleep infinity
`

// prepareState writes every file the holder and the daemons read.
func prepareState(cfg Config) error {
	if entries, err := os.ReadDir(cfg.StateDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("workstation: state directory %s is not empty (a workstation still running, or left by a crash: Cleanup removes it)", cfg.StateDir)
	}
	// /run/systemd exists, /run/systemd/resolve does not: resolved creates it for its own user
	// and refuses a root-owned one.
	for _, d := range []string{"etc", "var-lib/upper", "var-lib/work", "pids", runPath("/run/dbus"), runPath("/run/systemd"), runPath(confDir + "/conf.d"), runPath(connectionsDir)} {
		if err := os.MkdirAll(filepath.Join(cfg.StateDir, d), 0o755); err != nil {
			return fmt.Errorf("workstation: %w", err)
		}
	}
	if err := os.MkdirAll(cfg.LogDir, 0o755); err != nil {
		return fmt.Errorf("workstation: %w", err)
	}
	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return err
	}
	group, err := os.ReadFile("/etc/group")
	if err != nil {
		return err
	}
	passwd, group, err = withServiceUsers(passwd, group)
	if err != nil {
		return fmt.Errorf("workstation: %w", err)
	}
	files := []struct {
		path string
		data string
		mode os.FileMode
	}{
		{"etc/passwd", string(passwd), 0o644},
		{"etc/group", string(group), 0o644},
		{"etc/resolv.conf", stubResolvConf, 0o644},
		{runPath(confDir + "/dbus.conf"), dbusConfig(cfg.Packages), 0o644},
		{runPath(confDir + "/NetworkManager.conf"), networkManagerConfig(cfg), 0o644},
		// NetworkManager ignores a keyfile that others can read.
		{runPath(connectionsDir + "/workstation.nmconnection"), keyfile(cfg), 0o600},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(cfg.StateDir, f.path), []byte(f.data), f.mode); err != nil {
			return fmt.Errorf("workstation: %w", err)
		}
	}
	return nil
}

// runPath is a path under the workstation's /run relative to the state directory, whose run/
// the workstation sees as /run.
func runPath(inside string) string {
	rel, _ := strings.CutPrefix(inside, "/run/")
	return filepath.Join("run", rel)
}

// hostPath is where a path under the workstation's /run is seen from the machine.
func (w *Workstation) hostPath(inside string) string {
	return filepath.Join(w.cfg.StateDir, runPath(inside))
}

// env is the whole environment of every program run inside: the extracted programs first on
// PATH, their libraries, and nothing inherited from the caller.
func (w *Workstation) env() []string {
	root := w.cfg.Packages
	return []string{
		"PATH=" + strings.Join([]string{root.Path("usr/bin"), root.Path("usr/sbin"), "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}, ":"),
		"LD_LIBRARY_PATH=" + root.libraryPath(),
		"LANG=C.UTF-8",
		"HOME=/root",
	}
}

// insideArgv is argv run in the workstation's mount and network namespaces, with env().
// nsenter does not fork when it enters neither a pid nor a user namespace: the pid is the
// program's own.
func (w *Workstation) insideArgv(extraEnv []string, argv ...string) []string {
	out := []string{"nsenter", "--target", strconv.Itoa(w.running[procHolder].pid), "--mount", "--net", "--", "env", "-i"}
	out = append(out, w.env()...)
	out = append(out, extraEnv...)
	return append(out, argv...)
}

func (w *Workstation) launch(name string, spec procs.Spec) error {
	pid, done, err := w.procs.Start(spec)
	if err != nil {
		return fmt.Errorf("workstation: %w", err)
	}
	w.running[name] = process{pid: pid, done: done}
	return nil
}

// launchInside starts a daemon in the workstation, with env added to env().
func (w *Workstation) launchInside(name string, env []string, argv ...string) error {
	return w.launch(name, procs.Spec{Name: name, Dir: "/", Argv: w.insideArgv(env, argv...)})
}

// waitFor polls cond until it holds, the process name exits (an error with its log's tail), or
// ctx ends.
func (w *Workstation) waitFor(ctx context.Context, name, what string, cond func(context.Context) (bool, error)) error {
	p := w.running[name]
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("%s exited", name)
		default:
		}
		return cond(ctx)
	})
	if err != nil {
		return fmt.Errorf("workstation: waiting for %s: %w\n%s", what, err, logTail(w.procs.LogFile(name), 20))
	}
	return nil
}

// logTail returns the last n lines of a log, for error messages.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "last lines of " + path + ":\n  " + strings.Join(lines, "\n  ")
}
