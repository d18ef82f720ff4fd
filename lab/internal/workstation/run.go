package workstation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

// maxOutput bounds what Run keeps of a command's output and error stream.
const maxOutput = 1 << 20

// Command is name run inside the workstation (its mount and network namespaces, the
// extracted programs first on PATH), bounded by ctx.
func (w *Workstation) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	argv := w.insideArgv(nil, append([]string{name}, args...)...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...) //nolint:gosec // running commands in the lab's workstation is this function's job
	cmd.Dir = "/"
	cmd.Env = []string{}
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// Run runs name inside the workstation and returns its standard output; a failure carries its
// standard error. It satisfies pkg/workstation.CommandRunner, so client-check's seams can
// point at the real workstation.
func (w *Workstation) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := w.Command(ctx, name, args...)
	stdout, stderr := &capped{max: maxOutput}, &capped{max: maxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Shell runs a command line as a user pastes it into a shell on the workstation: sh -c, with
// sudo a no-op (everything already runs as root), so that the plugin's printed commands run
// exactly as printed.
func (w *Workstation) Shell(ctx context.Context, line string) ([]byte, error) {
	return w.Run(ctx, "sh", "-c", "sudo() { \"$@\"; }\n"+line)
}

// capped is a bytes.Buffer that drops what comes past max.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// SetResolvConf replaces what /etc/resolv.conf holds inside (resolved's stub by default). The
// file is rewritten in place, so the bind mount shows the new content: systemd-resolved, which
// finds it "foreign", imports its nameserver and search lines as its global settings at its
// next lookup (manager_read_resolv_conf).
func (w *Workstation) SetResolvConf(content string) error {
	f, err := os.OpenFile(filepath.Join(w.cfg.StateDir, "etc", "resolv.conf"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	return errors.Join(err, f.Close())
}

// CopyIn writes data to a file the workstation's programs can read, and returns its path
// inside. The machine's /run is not visible there (the workstation has its own), so files that
// live under it, such as the lab's kubeconfig and CA, are copied in.
func (w *Workstation) CopyIn(name string, data []byte) (string, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return "", fmt.Errorf("workstation: invalid file name %q", name)
	}
	inside := confDir + "/files/" + name
	host := w.hostPath(inside)
	if err := os.MkdirAll(filepath.Dir(host), 0o700); err != nil {
		return "", err
	}
	return inside, os.WriteFile(host, data, 0o600)
}

// Pids are the workstation's daemons and holder, by name.
func (w *Workstation) Pids() map[string]int {
	out := map[string]int{}
	for name, p := range w.running {
		out[name] = p.pid
	}
	return out
}

// MountNS is the workstation's mount namespace as /proc/PID/ns/mnt names it ("mnt:[4026532604]").
func (w *Workstation) MountNS() string { return w.mountNS }

// Config is the configuration the workstation runs with (defaults filled in).
func (w *Workstation) Config() Config { return w.cfg }

// LogFile is the log of one daemon ("systemd-resolved", "NetworkManager", "dbus-daemon").
func (w *Workstation) LogFile(name string) string { return w.procs.LogFile(name) }

// Stop ends NetworkManager, systemd-resolved, the bus and the holder, each by its pid (SIGTERM,
// then SIGKILL after 5 s), then any process still in the workstation's mount namespace (an
// error names them: the workstation must not leave any), and removes the state directory. The
// private mounts end with the namespace's last process. The interface keeps the addresses
// NetworkManager gave it.
func (w *Workstation) Stop(ctx context.Context) error {
	var errs []error
	for _, name := range stopOrder {
		p, ok := w.running[name]
		if !ok {
			continue
		}
		if err := procs.Terminate(ctx, p.pid); err != nil {
			errs = append(errs, fmt.Errorf("stop %s (pid %d): %w", name, p.pid, err))
		}
		if p.done != nil { // nil when attached: another process reaps it
			select {
			case <-p.done:
			case <-ctx.Done():
				errs = append(errs, fmt.Errorf("stop %s (pid %d): %w", name, p.pid, ctx.Err()))
			}
		}
		_ = os.Remove(w.procs.PidFile(name))
		delete(w.running, name)
	}
	if w.mountNS != "" {
		left, err := PidsInMountNS(w.mountNS)
		if err != nil {
			errs = append(errs, err)
		}
		for _, pid := range left {
			errs = append(errs, fmt.Errorf("process %d (%s) was still in the workstation's mount namespace", pid, comm(pid)))
			_ = procs.Terminate(ctx, pid)
		}
	}
	if err := os.RemoveAll(w.cfg.StateDir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Attach returns the workstation a Start with the same cfg left running (lab up starts it, a
// test process attaches to it): the pids come from the pidfiles in cfg.StateDir, each checked
// against its command line. Run, Shell and Stop work as on the started one.
func Attach(cfg Config) (*Workstation, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w := &Workstation{cfg: cfg, procs: procs.Manager{PidDir: filepath.Join(cfg.StateDir, "pids"), LogDir: cfg.LogDir}, running: map[string]process{}}
	for _, name := range stopOrder {
		pid, ok := w.procs.Pid(name, processMatch[name])
		if !ok {
			return nil, fmt.Errorf("workstation: %s is not running (no live process in %s)", name, w.procs.PidFile(name))
		}
		w.running[name] = process{pid: pid}
	}
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", w.running[procHolder].pid))
	if err != nil {
		return nil, fmt.Errorf("workstation: mount namespace of the holder: %w", err)
	}
	w.mountNS = ns
	return w, nil
}

// Cleanup ends the processes a workstation recorded in stateDir (pidfiles, each checked
// against its command line) and removes stateDir: what `lab down` does after a crash, when no
// *Workstation is left.
func Cleanup(ctx context.Context, stateDir string) error {
	m := procs.Manager{PidDir: filepath.Join(stateDir, "pids")}
	var errs []error
	for _, name := range stopOrder {
		if err := m.Stop(ctx, name, processMatch[name]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(stateDir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// PidsInMountNS lists the processes whose mount namespace is ns ("mnt:[inode]").
func PidsInMountNS(ns string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); err == nil && link == ns && procs.CmdlineContains(pid, "") {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}
