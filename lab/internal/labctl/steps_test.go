package labctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
)

func TestABringUpErrorNamesTheStepThatFailedAndStopsThere(t *testing.T) {
	exited := errors.New("kube-apiserver exited: bind: address already in use")
	var ran, said []string
	say := func(format string, args ...any) { said = append(said, fmt.Sprintf(format, args...)) }
	fake := func(name, lap string, err error) step {
		return step{name: name, lap: lap, run: func(context.Context) error {
			ran = append(ran, name)
			return err
		}}
	}
	err := runSteps(context.Background(), []step{
		fake("start etcd", "", nil),
		fake("write the audit policy", "certificates and kubeconfigs", nil),
		fake("start kube-apiserver", "", exited),
		fake("wait for kube-apiserver", "etcd and kube-apiserver", nil),
	}, say)

	require.ErrorIs(t, err, exited)
	assert.Equal(t, "step 'start kube-apiserver': kube-apiserver exited: bind: address already in use", err.Error())
	assert.Equal(t, []string{"start etcd", "write the audit policy", "start kube-apiserver"}, ran)
	require.Len(t, said, 1, "only the finished phase has its progress line")
	assert.Regexp(t, `^certificates and kubeconfigs +\d+\.\ds$`, said[0])
}

// The real step list, on a state directory that cannot be made (a file is in the way): the
// first step fails and says so, and nothing after it runs.
func TestTheBringUpStopsAtItsFirstStepWhenTheStateDirectoryCannotBeMade(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "not-a-directory")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	l := layout.Default()
	l.StateDir = filepath.Join(blocker, "state")
	b := &bringUp{l: l, o: Options{LabDir: t.TempDir()}, mgr: Procs(l)}

	err := runSteps(context.Background(), b.steps(), func(string, ...any) {})

	require.Error(t, err)
	assert.Regexp(t, `^step 'create the state directories': mkdir .*/not-a-directory: not a directory$`, err.Error())
	assert.NoFileExists(t, l.StateFile(), "the next step, record the state, did not run")
}

func TestEveryBringUpStepHasItsOwnName(t *testing.T) {
	b := &bringUp{l: layout.Default(), o: Options{LabDir: t.TempDir()}}
	seen := map[string]bool{}
	var laps []string
	for _, s := range b.steps() {
		assert.NotEmpty(t, s.name)
		assert.False(t, seen[s.name], "two steps are called %q: an error would not say which failed", s.name)
		seen[s.name] = true
		if s.lap != "" {
			laps = append(laps, s.lap)
		}
	}
	// The phases `lab up` reports, in order (the laptop's workstation starts once the network
	// exists, before the control plane).
	assert.Equal(t, []string{"certificates and kubeconfigs", "network namespaces", "workstation", "etcd and kube-apiserver",
		"controllers, kwok nodes, daemon", "manifests applied", "deployments available", "DNS, HTTPS and VPN answer",
		"NetworkPolicy enforcers ready"}, laps)
}
