package workstation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// client-check's --exec-timeout bounds each local program (it was accepted and unused), and a
// program that prints without end is cut at a bound and reported, not read into memory.
func TestExecRunnerBoundsEachProgramInTimeAndBytes(t *testing.T) {
	_, err := ExecRunner{Timeout: 200 * time.Millisecond}.Run(t.Context(), "sleep", "30")
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	out, err := ExecRunner{MaxOutput: 4096}.Run(t.Context(), "yes")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "printed more than 4096 bytes")
	assert.LessOrEqual(t, len(out), 4096)

	out, err = ExecRunner{Timeout: 10 * time.Second}.Run(t.Context(), "echo", "fine")
	require.NoError(t, err)
	assert.Equal(t, "fine\n", string(out))
}
