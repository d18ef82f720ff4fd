package bench

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
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
// the program in place, so the peak memory is the program's), and measures it. The timeout
// bounds the run: a run that overstays it is killed and reported as an error.
func RunProcess(ctx context.Context, timeout time.Duration, ns string, env []string, argv ...string) (Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if ns != "" {
		argv = append([]string{"ip", "netns", "exec", ns}, argv...)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	s := Sample{Wall: time.Since(start), Stdout: out.Bytes(), Stderr: errOut.Bytes()}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			s.MaxRSSKB = ru.Maxrss
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
	return s, nil
}
