// Package kubetest holds test doubles for package kube that other packages' tests share.
package kubetest

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// Reply is what one matching exec returns.
type Reply struct {
	Stdout string
	Stderr string
	Err    error
	// Delay makes the command take this long (honouring the context), to test deadlines.
	Delay time.Duration
}

// Rule answers commands in Pod ("namespace/name", empty for any) whose space-joined command
// line contains Match.
type Rule struct {
	Pod   string
	Match string
	Reply Reply
}

// Call records one exec.
type Call struct {
	Pod       podexec.PodRef
	Container string
	Command   []string
}

// FakeExecutor is a podexec.Executor that answers from rules, first match wins; a command no
// rule matches is an error naming it, so a test never passes on an unplanned command.
type FakeExecutor struct {
	mu    sync.Mutex
	rules []Rule
	calls []Call
}

// On adds a rule and returns the executor for chaining.
func (f *FakeExecutor) On(pod, match string, r Reply) *FakeExecutor {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, Rule{Pod: pod, Match: match, Reply: r})
	return f
}

// Calls returns the execs seen so far.
func (f *FakeExecutor) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Exec implements podexec.Executor.
func (f *FakeExecutor) Exec(ctx context.Context, ref podexec.PodRef, container string, cmd []string, _ io.Reader) ([]byte, []byte, error) {
	line := strings.Join(cmd, " ")
	f.mu.Lock()
	f.calls = append(f.calls, Call{Pod: ref, Container: container, Command: append([]string(nil), cmd...)})
	var reply *Reply
	for i := range f.rules {
		r := f.rules[i]
		if (r.Pod == "" || r.Pod == ref.String()) && strings.Contains(line, r.Match) {
			reply = &r.Reply
			break
		}
	}
	f.mu.Unlock()
	if reply == nil {
		return nil, nil, fmt.Errorf("fake exec: no reply planned for %q in pod %s", line, ref)
	}
	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	return []byte(reply.Stdout), []byte(reply.Stderr), reply.Err
}

// Exit is the reply of a command that ran and exited with code.
func Exit(code int, stdout, stderr string) Reply {
	return Reply{Stdout: stdout, Stderr: stderr, Err: &podexec.ExitError{Code: code, Stderr: stderr}}
}

// Missing is the reply of an image without tool.
func Missing(tool string) Reply {
	return Reply{Err: &podexec.ToolMissingError{Tool: tool, Detail: "sh: " + tool + ": not found"}}
}
