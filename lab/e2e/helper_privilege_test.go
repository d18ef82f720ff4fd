//go:build lab

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
	"github.com/lanaccess/kubectl-lanaccess/pkg/procnet"
)

// The lab's kubelet (kwok) runs exec as root, whatever the pod's securityContext says, so the
// helper's credentials are proven here against the kernel directly: the reads LA201 makes run
// under exactly the uid, gid and capabilities of each helper shape (podexec.HelperPod), through
// setpriv, in a node's namespaces, against real processes holding real sockets.

// setpriv is the command prefix that gives a process the credentials of a container with sc:
// its uid and gid, and as root exactly the added capabilities (Kubernetes gives a non-root
// container none: no ambient set), no privilege escalation.
func setpriv(sc *corev1.SecurityContext) []string {
	caps := "-all"
	if *sc.RunAsUser == 0 && sc.Capabilities != nil {
		for _, c := range sc.Capabilities.Add {
			caps += ",+" + strings.ToLower(string(c))
		}
	}
	return []string{"setpriv", fmt.Sprintf("--reuid=%d", *sc.RunAsUser), fmt.Sprintf("--regid=%d", *sc.RunAsGroup),
		"--clear-groups", "--inh-caps=" + caps, "--bounding-set=" + caps, "--no-new-privs"}
}

func helperContext(nameOwners bool) *corev1.SecurityContext {
	return podexec.HelperPod(podexec.HelperConfig{RunID: "k", NameOwners: nameOwners}, "x", "node-2").Spec.Containers[0].SecurityContext
}

// withoutCap returns sc with capability c no longer added.
func withoutCap(sc *corev1.SecurityContext, c corev1.Capability) *corev1.SecurityContext {
	out := sc.DeepCopy()
	var add []corev1.Capability
	for _, a := range out.Capabilities.Add {
		if a != c {
			add = append(add, a)
		}
	}
	out.Capabilities.Add = add
	return out
}

// listenerAs starts this test binary as a TCP listener on addr in node's namespace, under the
// credentials prefix (nil: root with every capability, as a system daemon), and returns its pid.
func listenerAs(t *testing.T, node, addr string, prefix []string) int {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	// Another uid must be able to run the binary: a copy in a world-readable directory.
	dir, err := os.MkdirTemp("", "lanaccess-listener-") //nolint:usetesting // another uid runs the binary: t.TempDir's parent is 0700
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "listener")
	copyFile(t, self, bin)
	argv := append(append([]string{"ip", "netns", "exec", node}, prefix...), bin)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{listenEnv + "=" + addr}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	eventually(t, 10*time.Second, func() error {
		out, err := lab.Exec(context.Background(), node, "ss", "-Hltn", "src", addr)
		if err != nil || !strings.Contains(out, addr) {
			return fmt.Errorf("%s not listening yet: %v %s", addr, err, out)
		}
		return nil
	})
	// ip netns exec and setpriv exec the next program: the listener keeps the pid.
	return cmd.Process.Pid
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// readAs runs one of LA201's node commands in node's namespace under sc's credentials.
func readAs(t *testing.T, node string, sc *corev1.SecurityContext, cmd []string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := lab.Exec(ctx, node, append(setpriv(sc), cmd...)...)
	require.NoError(t, err)
	return []byte(out)
}

// inodesAs reads the TCP table as LA201 does and returns the inode of each listening address.
func inodesAs(t *testing.T, node string, sc *corev1.SecurityContext) map[netip.AddrPort]uint64 {
	t.Helper()
	dump, err := procnet.SplitDump(readAs(t, node, sc, procnet.TablesCommand()))
	require.NoError(t, err)
	socks, bad := procnet.Listeners(procnet.TCP, dump.Tables[procnet.TCP], procnet.Options{})
	require.Empty(t, bad)
	out := map[netip.AddrPort]uint64{}
	for _, s := range socks {
		out[s.Local] = s.Inode
	}
	return out
}

// ownerAs runs LA201's owner scan for inode under sc's credentials: the pids found, and how
// many descriptors it was refused.
func ownerAs(t *testing.T, node string, sc *corev1.SecurityContext, inode uint64) ([]int, int) {
	t.Helper()
	o, err := procnet.ParseOwners(readAs(t, node, sc, procnet.OwnersCommand([]uint64{inode})))
	require.NoError(t, err)
	pids := make([]int, 0, len(o.ByInode[inode]))
	for _, ow := range o.ByInode[inode] {
		pids = append(pids, ow.PID)
	}
	return pids, o.Denied
}

func TestTheKernelAsksExactlyWhatEachHelperShapeHolds(t *testing.T) {
	const node = "node-2"
	daemonAddr, userAddr := netip.MustParseAddrPort("127.0.0.1:47901"), netip.MustParseAddrPort("127.0.0.1:47902")
	daemon := listenerAs(t, node, daemonAddr.String(), nil)
	user := listenerAs(t, node, userAddr.String(), []string{"setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"})

	sockets, owners := helperContext(false), helperContext(true)
	require.Equal(t, int64(65534), *sockets.RunAsUser)

	// The socket tables: nobody with no capability reads every socket, with its inode.
	inodes := inodesAs(t, node, sockets)
	require.NotZero(t, inodes[daemonAddr], "the root daemon's socket is listed")
	require.NotZero(t, inodes[userAddr], "the other user's socket is listed")

	// Naming the owner: the default helper cannot, and says it was refused.
	for _, addr := range []netip.AddrPort{daemonAddr, userAddr} {
		pids, denied := ownerAs(t, node, sockets, inodes[addr])
		assert.Empty(t, pids, "%s named by the sockets-only helper", addr)
		assert.Positive(t, denied)
	}
	// The owner-naming helper names both.
	pids, _ := ownerAs(t, node, owners, inodes[daemonAddr])
	assert.Equal(t, []int{daemon}, pids)
	pids, _ = ownerAs(t, node, owners, inodes[userAddr])
	assert.Equal(t, []int{user}, pids)
	// Each of its two capabilities is needed: without CAP_SYS_PTRACE a root daemon (more
	// capable than the reader) is hidden; without CAP_DAC_READ_SEARCH another uid's is.
	pids, _ = ownerAs(t, node, withoutCap(owners, "SYS_PTRACE"), inodes[daemonAddr])
	assert.Empty(t, pids, "root daemon named without CAP_SYS_PTRACE")
	pids, _ = ownerAs(t, node, withoutCap(owners, "DAC_READ_SEARCH"), inodes[userAddr])
	assert.Empty(t, pids, "another uid's process named without CAP_DAC_READ_SEARCH")
}
