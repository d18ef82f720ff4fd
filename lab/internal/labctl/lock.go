package labctl

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

// LockHeldEnv, set in the environment of `lab up`, says the caller already holds the lab lock
// (labkit.Main, which runs `lab up` while holding it for the whole test run).
const LockHeldEnv = "LAB_LOCK_HELD"

// LockLab takes the lab's exclusive lock (layout.TestLock), waiting and saying so on out
// while another holder has it. Test binaries hold it for their whole run, and `lab down`
// takes it so that it never removes the lab under running tests. The lock file is left in
// place: removing it would let a waiter and a newcomer both "hold" the lock.
func LockLab(l layout.Layout, out io.Writer) (func(), error) {
	f, err := os.OpenFile(l.TestLock(), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lab lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_, _ = fmt.Fprintf(out, "[lab] another test run is using the lab (lock %s); waiting\n", l.TestLock())
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("lab lock: %w", err)
		}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
