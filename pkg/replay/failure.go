package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/probe"
)

// The kinds of a Failure: each is an error the checks tell apart (errors.As, errors.Is), so the
// replay rebuilds the same type. Anything else is "error", its text only.
const (
	kindNoAnswer    = "no-answer"
	kindRefused     = "refused"
	kindExit        = "exit"
	kindToolMissing = "tool-missing"
	kindAPIStatus   = "api-status"
	kindDeadline    = "deadline"
	kindCanceled    = "canceled"
	kindLookup      = "lookup"
	kindNotFound    = "program-not-found"
	kindNoFile      = "file-not-found"
	kindErrno       = "errno"
	kindOther       = "error"
)

// failureOf records err as a Failure (nil for nil).
func failureOf(err error) *Failure {
	if err == nil {
		return nil
	}
	f := &Failure{Kind: kindOther, Message: bound(err.Error(), 4096)}
	var (
		na     *probe.NoAnswerError
		ee     *podexec.ExitError
		tm     *podexec.ToolMissingError
		status apierrors.APIStatus
		dnsErr *net.DNSError
	)
	switch {
	case errors.As(err, &na):
		f.Kind, f.Target, f.Network, f.What, f.Within = kindNoAnswer, na.Target.String(), na.Network, na.What, na.Within
		if na.Err != nil {
			f.Stderr = bound(na.Err.Error(), 4096) // the cause, which the error's text ends with
		}
	case errors.As(err, &ee):
		f.Kind, f.Code, f.Stderr = kindExit, ee.Code, bound(ee.Stderr, MaxBodyBytes)
	case errors.As(err, &tm):
		f.Kind, f.Tool, f.Stderr = kindToolMissing, tm.Tool, bound(tm.Detail, 4096)
	case errors.As(err, &status):
		raw, _ := json.Marshal(status.Status())
		f.Kind, f.Stderr = kindAPIStatus, string(raw)
	case errors.Is(err, syscall.ECONNREFUSED):
		f.Kind = kindRefused
	case errnoOf(err) != "":
		f.Kind, f.What = kindErrno, errnoOf(err)
	case errors.Is(err, context.DeadlineExceeded):
		f.Kind = kindDeadline
	case errors.Is(err, context.Canceled):
		f.Kind = kindCanceled
	case errors.As(err, &dnsErr):
		f.Kind, f.What, f.Target, f.Stderr = kindLookup, dnsErr.Name, dnsErr.Server, dnsErr.Err
		if dnsErr.IsNotFound {
			f.Code = 1
		}
		if dnsErr.IsTimeout {
			f.Code |= 2
		}
	case errors.Is(err, exec.ErrNotFound):
		f.Kind = kindNotFound
	case errors.Is(err, fs.ErrNotExist):
		f.Kind = kindNoFile
	}
	return f
}

// replayed is an error rebuilt from a bundle: its text is the recorded one, and it unwraps to
// the typed error the checks look for.
type replayed struct {
	msg   string
	cause error
}

func (e *replayed) Error() string { return e.msg }
func (e *replayed) Unwrap() error { return e.cause }

// Err rebuilds the recorded error.
func (f *Failure) Err() error {
	if f == nil {
		return nil
	}
	wrap := func(cause error) error { return &replayed{msg: f.Message, cause: cause} }
	switch f.Kind {
	case kindNoAnswer:
		target, _ := netip.ParseAddrPort(f.Target)
		na := &probe.NoAnswerError{Target: target, Network: f.Network, What: f.What, Within: f.Within, Err: errors.New(f.Stderr)}
		if f.Stderr == "" {
			// A bundle that kept only the text: its cause is what follows the question.
			na.Err = errors.New(strings.TrimSpace(strings.TrimPrefix(f.Message, strings.TrimSpace(na.Error()))))
		}
		return na
	case kindExit:
		return wrap(&podexec.ExitError{Code: f.Code, Stderr: f.Stderr})
	case kindToolMissing:
		return wrap(&podexec.ToolMissingError{Tool: f.Tool, Detail: f.Stderr})
	case kindAPIStatus:
		var st metav1.Status
		if err := json.Unmarshal([]byte(f.Stderr), &st); err != nil {
			return wrap(fmt.Errorf("replayed API status: %w", err))
		}
		return &apierrors.StatusError{ErrStatus: st}
	case kindRefused:
		return wrap(syscall.ECONNREFUSED)
	case kindDeadline:
		return wrap(context.DeadlineExceeded)
	case kindCanceled:
		return wrap(context.Canceled)
	case kindLookup:
		return &net.DNSError{Err: f.Stderr, Name: f.What, Server: f.Target, IsNotFound: f.Code&1 != 0, IsTimeout: f.Code&2 != 0}
	case kindNotFound:
		return wrap(exec.ErrNotFound)
	case kindNoFile:
		return wrap(fs.ErrNotExist)
	case kindErrno:
		if e, ok := errnos[f.What]; ok {
			return wrap(e)
		}
	}
	return errors.New(f.Message)
}

// errnos are the system errors the checks tell apart beside ECONNREFUSED, by name: their
// numbers differ between systems, and a bundle may be replayed on another one.
var errnos = map[string]syscall.Errno{
	"ENETUNREACH": syscall.ENETUNREACH, "EHOSTUNREACH": syscall.EHOSTUNREACH, "EMSGSIZE": syscall.EMSGSIZE,
	"ECONNRESET": syscall.ECONNRESET, "EPERM": syscall.EPERM, "EACCES": syscall.EACCES,
}

// errnoOf names the errno of errnos that err wraps ("" for none).
func errnoOf(err error) string {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return ""
	}
	for name, v := range errnos {
		if v == e {
			return name
		}
	}
	return ""
}

// bound cuts s to n bytes.
func bound(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
