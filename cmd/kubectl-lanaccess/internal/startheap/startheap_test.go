package startheap

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gcPercent reads GOGC without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// collectUntil runs collections (finalizers run after them, on their own goroutine) until cond
// holds, at most 50 times.
func collectUntil(cond func() bool) bool {
	for range 50 {
		runtime.GC()
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func TestRaiseHoldsWhileTheHeapIsSmallAndGivesBackOnceItGrows(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(gcPercent())
	debug.SetGCPercent(100)

	Raise()
	require.True(t, Raised())
	assert.Equal(t, Percent, gcPercent())
	for range 3 {
		runtime.GC()
	}
	time.Sleep(20 * time.Millisecond)
	assert.True(t, Raised(), "a small live heap keeps GOGC raised")
	assert.Equal(t, Percent, gcPercent())

	live := make([][]byte, 0, 64)
	for range 64 {
		live = append(live, make([]byte, 128<<10)) // 8 MiB live, in pointers the GC follows
	}
	assert.True(t, collectUntil(func() bool { return !Raised() }), "a live heap of Live bytes or more gives GOGC back")
	assert.Equal(t, 100, gcPercent())
	runtime.KeepAlive(live)
}

func TestRestoreGivesBackAtOnce(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(gcPercent())
	debug.SetGCPercent(100)

	Raise()
	assert.Equal(t, Percent, gcPercent())
	Restore()
	assert.False(t, Raised())
	assert.Equal(t, 100, gcPercent())
	Restore() // twice is harmless
	assert.Equal(t, 100, gcPercent())
}

func TestTheUsersGCSettingsAreKept(t *testing.T) {
	defer debug.SetGCPercent(gcPercent())
	for _, env := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv("GOGC", "")
			t.Setenv("GOMEMLIMIT", "")
			t.Setenv(env, "200")
			debug.SetGCPercent(100)
			Raise()
			assert.False(t, Raised())
			assert.Equal(t, 100, gcPercent())
		})
	}
}
