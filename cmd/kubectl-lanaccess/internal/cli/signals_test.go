package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/internal/syncbuf"
)

// The test binary re-runs itself as a process that waits on InterruptContext and ignores the
// first signal's cancellation (as a run busy deleting helper pods would), so that only the
// second signal can end it.
func TestASecondInterruptEndsTheProcessAtOnce(t *testing.T) {
	if os.Getenv("LANACCESS_SIGNAL_CHILD") == "1" {
		var errOut bytes.Buffer
		ctx, cancel := InterruptContext(t.Context(), &errOut, syscall.SIGINT)
		defer cancel()
		os.Stdout.WriteString("listening\n")
		<-ctx.Done()
		os.Stdout.WriteString("first interrupt seen\n")
		time.Sleep(time.Minute) // cleaning up, slowly
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestASecondInterruptEndsTheProcessAtOnce$")
	cmd.Env = append(os.Environ(), "LANACCESS_SIGNAL_CHILD=1")
	var out syncbuf.Buffer
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	// The first signal goes once the child listens: sent earlier (a slow start on a busy
	// machine), it would kill the child before InterruptContext could catch it.
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "listening") }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "first interrupt seen") }, 10*time.Second, 20*time.Millisecond)
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	assert.Less(t, time.Since(start), 5*time.Second, "the second interrupt ends the process")
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "interrupt", ee.ProcessState.Sys().(syscall.WaitStatus).Signal().String())
}
