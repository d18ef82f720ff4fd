package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Sample is one measured process run.
type Sample struct {
	Wall     time.Duration
	MaxRSSKB int64         // peak resident memory of the process (getrusage ru_maxrss)
	CPU      time.Duration // user + system time of the process
	Code     int
	Stdout   []byte
	Stderr   []byte
}

// RunProcess runs argv, inside network namespace ns when ns is not empty (`ip netns exec` execs
// the program in place), and measures it. The timeout bounds the run: a run that overstays it is
// killed and reported as an error.
//
// Peak memory comes from GNU time (-f %M), not from this process's wait: Go starts children with
// vfork, so the kernel counts the parent's (the benchmark's) resident size into the child's
// ru_maxrss, and a benchmark holding 10,000 pods would seem to grow the plugin.
func RunProcess(ctx context.Context, timeout time.Duration, ns string, env []string, argv ...string) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	rssFile, err := os.CreateTemp("", "lanaccess-bench-rss-")
	if err != nil {
		return Sample{}, err
	}
	_ = rssFile.Close() // only its name is used: time writes to it
	defer func() { _ = os.Remove(rssFile.Name()) }()
	argv = append([]string{timeBin, "-q", "-f", "%M", "-o", rssFile.Name()}, argv...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...) //nolint:gosec // measuring the benchmark's own commands is this function's job
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	s := Sample{Wall: time.Since(start), Stdout: out.Bytes(), Stderr: errOut.Bytes()}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			// time waited for the program: its usage is in time's.
			s.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
		s.Code = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		return s, ctx.Err()
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		return s, err
	}
	if b, err := os.ReadFile(rssFile.Name()); err == nil {
		s.MaxRSSKB, _ = strconv.ParseInt(strings.TrimSpace(lastLine(b)), 10, 64)
	}
	return s, nil
}

// timeBin is GNU time (Debian package time; lab/install-deps.sh installs it).
const timeBin = "/usr/bin/time"
