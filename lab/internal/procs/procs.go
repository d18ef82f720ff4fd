// Package procs starts the lab's long-running processes detached from the caller (their own
// session, output in a log file, a pidfile in the state directory) and stops them again. The
// pidfile plus a check of the process's command line is how a later `lab down` finds them after
// a crash without ever signalling an unrelated process that reused the pid.
package procs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Spec describes one process.
type Spec struct {
	// Name identifies the process: pidfile <PidDir>/<Name>.pid, log <LogDir>/<Name>.log.
	Name string
	// NS is the network namespace to run in ("" = root namespace).
	NS   string
	Argv []string
	Dir  string
	Env  []string
}

// Manager knows where pidfiles and logs go.
type Manager struct {
	PidDir string
	LogDir string
}

// PidFile is the pidfile path of a process name.
func (m Manager) PidFile(name string) string { return filepath.Join(m.PidDir, name+".pid") }

// LogFile is the log path of a process name.
func (m Manager) LogFile(name string) string { return filepath.Join(m.LogDir, name+".log") }

// Start launches spec in the background and records its pid. The returned channel is closed
// when the process exits (the caller may ignore it; it also reaps the child while the caller
// lives).
func (m Manager) Start(spec Spec) (int, <-chan struct{}, error) {
	if err := os.MkdirAll(m.PidDir, 0o755); err != nil {
		return 0, nil, fmt.Errorf("pid dir: %w", err)
	}
	if err := os.MkdirAll(m.LogDir, 0o755); err != nil {
		return 0, nil, fmt.Errorf("log dir: %w", err)
	}
	logf, err := os.OpenFile(m.LogFile(spec.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, nil, fmt.Errorf("log for %s: %w", spec.Name, err)
	}
	defer func() { _ = logf.Close() }() // the child has its own copy of the descriptor
	argv := spec.Argv
	if spec.NS != "" {
		// ip netns exec execs the program, so the pid we record is the program's own.
		argv = append([]string{"ip", "netns", "exec", spec.NS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...) //nolint:gosec // starting the lab's processes from their specs is this package's job; argv is never a shell string
	cmd.Dir = spec.Dir
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A new session: the process survives the caller (lab up exits, the lab stays) and a
	// terminal's Ctrl-C does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	pid := cmd.Process.Pid
	if err := os.WriteFile(m.PidFile(spec.Name), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		_ = cmd.Process.Kill()
		return 0, nil, fmt.Errorf("pidfile for %s: %w", spec.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return pid, done, nil
}

// Pid returns the recorded pid of name if that process is still alive and its command line
// still contains match (so a reused pid is never mistaken for ours).
func (m Manager) Pid(name, match string) (int, bool) {
	b, err := os.ReadFile(m.PidFile(name))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, CmdlineContains(pid, match)
}

// CmdlineContains reports whether process pid is alive (not a zombie) and its command line
// contains s.
func CmdlineContains(pid int, s string) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// Field 3 is the state; a zombie has exited and only waits for its parent.
	if i := strings.LastIndexByte(string(stat), ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), s)
}

// Stop ends process name (if alive and matching) and removes its pidfile.
func (m Manager) Stop(ctx context.Context, name, match string) error {
	pid, alive := m.Pid(name, match)
	if alive {
		if err := Terminate(ctx, pid); err != nil {
			return fmt.Errorf("stop %s: %w", name, err)
		}
	}
	if err := os.Remove(m.PidFile(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Terminate sends SIGTERM, waits up to 5 s (or ctx), then SIGKILL.
func Terminate(ctx context.Context, pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return nil
		}
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if !alive(pid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	for i := 0; i < 40 && alive(pid); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	zombie := i > 0 && len(stat) > i+2 && stat[i+2] == 'Z'
	return !zombie
}

// Signal sends sig to the recorded process if it is alive and matches.
func (m Manager) Signal(name, match string, sig syscall.Signal) error {
	pid, ok := m.Pid(name, match)
	if !ok {
		return fmt.Errorf("process %s is not running", name)
	}
	return syscall.Kill(pid, sig)
}
