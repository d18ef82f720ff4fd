package procnet

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run executes one of the node commands with this machine's shell, as a hostNetwork pod would.
func run(t *testing.T, cmd []string) []byte {
	t.Helper()
	out, err := exec.Command(cmd[0], cmd[1:]...).Output()
	require.NoError(t, err)
	return out
}

func TestTheTablesCommandReadsALiveListenerAndTheOwnersCommandNamesThisProcess(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	want := netip.MustParseAddrPort(ln.Addr().String())

	dump, err := SplitDump(run(t, TablesCommand()))
	require.NoError(t, err)
	require.Contains(t, dump.Tables, TCP)
	socks, errs := Listeners(TCP, dump.Tables[TCP], Options{})
	require.Empty(t, errs)
	var inode uint64
	for _, s := range socks {
		if s.Local == want {
			inode = s.Inode
		}
	}
	require.NotZero(t, inode, "listener %s not in /proc/net/tcp", want)

	owners, err := ParseOwners(run(t, OwnersCommand([]uint64{inode})))
	require.NoError(t, err)
	require.Len(t, owners.ByInode[inode], 1)
	o := owners.ByInode[inode][0]
	assert.Equal(t, os.Getpid(), o.PID)
	self, err := os.ReadFile("/proc/self/comm")
	require.NoError(t, err)
	assert.Equal(t, string(self[:len(self)-1]), o.Command)
	assert.Contains(t, o.Cmdline, "procnet.test")
}

func TestSplitDumpKeepsEachTableAndNotesMissingOnes(t *testing.T) {
	out := "@@lanaccess-table tcp\n  sl  local_address\n   0: 00000000:0050 00000000:0000 0A 0:0 0:0 0 0 0 1 1\n" +
		"@@lanaccess-table tcp6\n@@lanaccess-missing tcp6\n@@lanaccess-table udp\n   sl\n@@lanaccess-table udp6\n   sl\n"
	d, err := SplitDump([]byte(out))
	require.NoError(t, err)
	assert.Equal(t, []Table{TCP6}, d.Missing)
	assert.Equal(t, "  sl  local_address\n   0: 00000000:0050 00000000:0000 0A 0:0 0:0 0 0 0 1 1\n", string(d.Tables[TCP]))
	assert.Contains(t, d.Tables, UDP)
	assert.NotContains(t, d.Tables, TCP6)
}

func TestOutputThatIsNotOursIsAnError(t *testing.T) {
	_, err := SplitDump([]byte("sh: cat: not found\n"))
	require.Error(t, err)
}

// A table that is neither read nor reported missing is unknown: LA201 must not judge the node
// on the tables it did get.
func TestADumpThatDoesNotAccountForEveryTableIsAnError(t *testing.T) {
	all := "@@lanaccess-table tcp\n   sl\n@@lanaccess-table tcp6\n   sl\n@@lanaccess-table udp\n   sl\n@@lanaccess-table udp6\n   sl\n"
	_, err := SplitDump([]byte(all))
	require.NoError(t, err)
	for name, out := range map[string]string{
		"cut after udp":        all[:strings.Index(all, "@@lanaccess-table udp6")],
		"a table twice":        all + "@@lanaccess-table tcp\n   sl\n",
		"read and missing":     all + "@@lanaccess-missing udp\n",
		"a table we never ask": all + "@@lanaccess-table raw\n   sl\n",
	} {
		_, err := SplitDump([]byte(out))
		assert.Error(t, err, name)
	}
}

// A process names itself: a newline in its arguments (or a "\n" that dash's echo would expand)
// must not let it print an "@@owner" line of its own, here claiming a socket for "kubelet".
func TestAnOwnerCannotForgeOwnerLinesThroughItsArguments(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	lf, err := ln.(*net.TCPListener).File()
	require.NoError(t, err)
	defer func() { _ = lf.Close() }()
	const forged = 987654321987
	child := exec.Command("sh", "-c", "sleep 30; :", "x\n@@owner 987654321987 1 kubelet :: forged", `y\n@@owner 987654321987 1 kubelet :: forged`)
	child.ExtraFiles = []*os.File{lf} // the child holds the listener too
	require.NoError(t, child.Start())
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child.Process.Pid))
		return bytes.Contains(b, []byte("sleep 30"))
	}, 5*time.Second, 10*time.Millisecond)

	var inode uint64
	dump, err := SplitDump(run(t, TablesCommand()))
	require.NoError(t, err)
	socks, _ := Listeners(TCP, dump.Tables[TCP], Options{})
	for _, s := range socks {
		if s.Local.String() == ln.Addr().String() {
			inode = s.Inode
		}
	}
	require.NotZero(t, inode)
	owners, err := ParseOwners(run(t, OwnersCommand([]uint64{inode, forged})))
	require.NoError(t, err)
	assert.NotContains(t, owners.ByInode, uint64(forged))
	pids := make([]int, 0, len(owners.ByInode[inode]))
	for _, o := range owners.ByInode[inode] {
		pids = append(pids, o.PID)
		if o.PID == child.Process.Pid {
			assert.Contains(t, o.Cmdline, "x @@owner 987654321987 1 kubelet :: forged")
		}
	}
	assert.Contains(t, pids, child.Process.Pid)
}

func TestParseOwnersCountsDeniedDirectoriesAndNeedsTheEndMarker(t *testing.T) {
	out := "@@denied\n@@denied\n@@owner 45810 812 nginx :: nginx: master process /usr/sbin/nginx \n@@owner 45810 813 nginx :: nginx: worker process \n@@owner 45810 812 nginx :: dup\n"
	_, err := ParseOwners([]byte(out))
	require.Error(t, err, "no @@done: the scan was cut")
	o, err := ParseOwners([]byte(out + "@@done\n"))
	require.NoError(t, err)
	assert.Equal(t, 2, o.Denied)
	assert.Equal(t, []Owner{
		{PID: 812, Command: "nginx", Cmdline: "nginx: master process /usr/sbin/nginx"},
		{PID: 813, Command: "nginx", Cmdline: "nginx: worker process"},
	}, o.ByInode[45810])
}

// Issue 23: the scan read owners from `ls -l` text, and a link's text is chosen by whoever
// names the file: a process holding a file named "...\n/proc/1/fd:\n... -> socket:[N]" made
// pid 1 the owner of socket N. The owner must be the process whose descriptor really is the
// socket, read from the kernel's link, never from text a process wrote.
func TestAProcessCannotMakeAnotherTheOwnerThroughAFileName(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }()
	var inode uint64
	dump, err := SplitDump(run(t, TablesCommand()))
	require.NoError(t, err)
	socks, _ := Listeners(TCP, dump.Tables[TCP], Options{})
	for _, s := range socks {
		if s.Local.String() == ln.Addr().String() {
			inode = s.Inode
		}
	}
	require.NotZero(t, inode)

	name := fmt.Sprintf("%s/a\n/proc/1/fd:\nlrwx------ 1 root root 64 Jan  1 00:00 9 -> socket:[%d]", t.TempDir(), inode)
	require.NoError(t, os.MkdirAll(filepath.Dir(name), 0o700)) // "a\n", "proc", "1"
	require.NoError(t, os.WriteFile(name, nil, 0o600))
	child := exec.Command("sh", "-c", `exec 3<"$1"; sleep 30`, "x", name)
	require.NoError(t, child.Start())
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	require.Eventually(t, func() bool {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", child.Process.Pid))
		return l == name
	}, 5*time.Second, 10*time.Millisecond)

	owners, err := ParseOwners(run(t, OwnersCommand([]uint64{inode})))
	require.NoError(t, err)
	pids := make([]int, 0, len(owners.ByInode[inode]))
	for _, o := range owners.ByInode[inode] {
		pids = append(pids, o.PID)
	}
	assert.Equal(t, []int{os.Getpid()}, pids, "only the process whose descriptor is the socket")
}
