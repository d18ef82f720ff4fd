package cli

import (
	"bytes"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary re-runs itself as a process that waits on InterruptContext and ignores the
// first signal's cancellation (as a run busy deleting helper pods would), so that only the
// second signal can end it.
func TestASecondInterruptEndsTheProcessAtOnce(t *testing.T) {
	if os.Getenv("LANACCESS_SIGNAL_CHILD") == "1" {
		var errOut bytes.Buffer
		ctx, cancel := InterruptContext(t.Context(), &errOut, syscall.SIGINT)
		defer cancel()
		<-ctx.Done()
		os.Stdout.WriteString("first interrupt seen\n")
		time.Sleep(time.Minute) // cleaning up, slowly
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestASecondInterruptEndsTheProcessAtOnce$")
	cmd.Env = append(os.Environ(), "LANACCESS_SIGNAL_CHILD=1")
	var out bytes.Buffer
	cmd.Stdout = &out
	require.NoError(t, cmd.Start())
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.Eventually(t, func() bool { return bytes.Contains(out.Bytes(), []byte("first interrupt seen")) }, 10*time.Second, 20*time.Millisecond)
	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err := cmd.Wait()
	assert.Less(t, time.Since(start), 5*time.Second, "the second interrupt ends the process")
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "interrupt", ee.ProcessState.Sys().(syscall.WaitStatus).Signal().String())
}
