package workstation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"time"
)

// Resolver is this machine's resolver as programs see it. *net.Resolver satisfies it; tests
// give a net.Resolver whose Dial goes to a DNS server on loopback.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CommandRunner runs a local program and returns its standard output. An absent program is an
// error that wraps exec.ErrNotFound.
type CommandRunner interface {
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// ExecRunner runs programs with os/exec, bounded by ctx, by Timeout per program
// (client-check's --exec-timeout) and by MaxOutput bytes of standard output (a program that
// prints more is an error, not a silent cut).
type ExecRunner struct {
	Timeout   time.Duration // 0: only ctx bounds it
	MaxOutput int           // 0: DefaultMaxOutput
}

// DefaultMaxOutput bounds what one local program may print: resolvectl and nmcli print a few
// kilobytes on a workstation with many links.
const DefaultMaxOutput = 1 << 20

// Run implements CommandRunner; the error carries the program's standard error.
func (r ExecRunner) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	limit := r.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	cmd := exec.CommandContext(ctx, name, args...)
	stdout := &limitedBuffer{max: limit}
	stderr := &limitedBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	out := stdout.buf.Bytes()
	if stdout.over {
		return out, fmt.Errorf("%s %s: printed more than %d bytes: not read further", name, strings.Join(args, " "), limit)
	}
	if err != nil && ctx.Err() != nil {
		return out, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), ctx.Err())
	}
	if err != nil {
		if msg := strings.TrimSpace(stderr.buf.String()); msg != "" {
			return out, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
		}
		return out, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return out, nil
}

// limitedBuffer keeps at most max bytes and refuses more, which makes os/exec stop copying.
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > b.max {
		b.over = true
		b.buf.Write(p[:max(b.max-b.buf.Len(), 0)])
		return 0, errTooMuchOutput
	}
	return b.buf.Write(p)
}

var errTooMuchOutput = errors.New("output past its bound")
