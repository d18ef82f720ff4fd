package procnet

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The commands below run in a shell on a node (a hostNetwork pod): busybox or coreutils tools
// only (cat, ls, grep, tr), nothing written to disk (helper pods have a read-only root).

const tableMarker = "@@lanaccess-table "
const missingMarker = "@@lanaccess-missing "

// TablesCommand prints the four tables, each after a marker line; a table the kernel does not
// have (IPv6 disabled) is marked missing rather than failing the whole read.
func TablesCommand() []string {
	return []string{"sh", "-c", `for t in tcp tcp6 udp udp6; do echo "` + tableMarker + `$t"; { cat /proc/net/$t 2>/dev/null && echo; } || echo "` + missingMarker + `$t"; done`}
}

// Dump is the output of TablesCommand split per table.
type Dump struct {
	Tables  map[Table][]byte
	Missing []Table
}

// SplitDump splits TablesCommand's output. Output without any marker is an error (whatever
// ran was not our command), and so is output that does not account for each of the four
// tables exactly once (see complete).
func SplitDump(out []byte) (Dump, error) {
	d := Dump{Tables: map[Table][]byte{}}
	var cur Table
	var buf bytes.Buffer
	flush := func() {
		if cur != "" {
			d.Tables[cur] = append([]byte(nil), buf.Bytes()...)
		}
		buf.Reset()
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, tableMarker):
			flush()
			cur = Table(strings.TrimSpace(strings.TrimPrefix(line, tableMarker)))
			if _, again := d.Tables[cur]; again {
				return d, fmt.Errorf("socket table %s is reported more than once", cur)
			}
		case strings.HasPrefix(line, missingMarker):
			d.Missing = append(d.Missing, Table(strings.TrimSpace(strings.TrimPrefix(line, missingMarker))))
			cur = ""
		case cur != "":
			buf.WriteString(line)
			buf.WriteByte('\n')
		}
	}
	flush()
	if err := sc.Err(); err != nil {
		return d, fmt.Errorf("reading socket tables: %w", err)
	}
	if len(d.Tables) == 0 && len(d.Missing) == 0 {
		return d, errors.New("no socket table in the output (the command did not run as expected)")
	}
	return d, d.complete()
}

// complete checks that the dump accounts for each of the four tables exactly once, as
// TablesCommand prints them: a table neither read nor missing means the output was cut, and
// a name the command never prints means something else wrote it. Either way the sockets that
// are not there are unknown, not absent.
func (d Dump) complete() error {
	seen := map[Table]int{}
	for t := range d.Tables {
		seen[t]++
	}
	for _, t := range d.Missing {
		seen[t]++
	}
	for t, n := range seen {
		if !t.valid() {
			return fmt.Errorf("socket table %q is not one the command reads", truncate(string(t), 40))
		}
		if n > 1 {
			return fmt.Errorf("socket table %s is reported more than once", t)
		}
	}
	for _, t := range Tables() {
		if seen[t] == 0 {
			return fmt.Errorf("socket table %s is neither in the output nor reported missing (the output was cut)", t)
		}
	}
	return nil
}

// Owner is a process holding a socket.
type Owner struct {
	PID     int
	Command string // /proc/<pid>/comm
	Cmdline string // /proc/<pid>/cmdline with NULs as spaces
}

// OwnersCommand finds the processes whose descriptors are the sockets of the given inodes. It
// needs the host's PID namespace to see the node's processes, and root with enough
// capabilities to read their fd directories; unreadable ones are reported, not guessed.
//
// Every text a process controls is untrusted: `ls -l` prints link targets raw, so a process
// holding a file named "x\n/proc/1/fd:\n... -> socket:[N]" can write lines that look like
// another process's listing. One `ls -l` of all fd directories therefore only nominates
// candidate pids (one process for the whole node); each candidate's descriptors are then read
// with `stat -L -c '%n %i %F'`, which prints the path it was given (/proc/<pid>/fd/<fd>, made by
// this script), the inode the descriptor really is and its type ("socket" in coreutils' and
// busybox's stat, file_type of coreutils/stat.c): a descriptor counts only when
// it is a socket of one of the inodes, under the pid of the directory the loop named. A
// process's name and arguments are printed as spaces, through printf's %s (dash's echo would
// expand a "\n" they contain), so that an owner cannot add lines of its own to the output.
func OwnersCommand(inodes []uint64) []string {
	alts := make([]string, 0, len(inodes))
	for _, i := range inodes {
		alts = append(alts, strconv.FormatUint(i, 10))
	}
	re := `^/proc/[0-9]+/fd:$|socket:\[(` + strings.Join(alts, "|") + `)\]$|denied`
	script := `cands=$(ls -l /proc/[0-9]*/fd 2>&1 | grep -E '` + re + `' | while read -r line; do
case "$line" in
/proc/*/fd:) pid=${line#/proc/}; pid=${pid%/fd:} ;;
*denied*) echo "@@denied" ;;
*socket:*) echo "$pid" ;;
esac
done)
printf '%s\n' "$cands" | grep '^@@denied$'
for pid in $(printf '%s\n' "$cands" | grep -E '^[0-9]+$' | sort -u); do
stat -L -c '%n %i %F' /proc/$pid/fd/* 2>/dev/null | grep -E '^/proc/'$pid'/fd/[0-9]+ (` + strings.Join(alts, "|") + `) socket$' | while read -r _ ino _; do
printf '@@owner %s %s %s :: %s\n' "$ino" "$pid" "$(tr '\n' ' ' < /proc/$pid/comm 2>/dev/null)" "$(tr '\0\n' '  ' < /proc/$pid/cmdline 2>/dev/null)"
done
done; echo "@@done"`
	return []string{"sh", "-c", script}
}

// Owners is what OwnersCommand found.
type Owners struct {
	ByInode map[uint64][]Owner
	// Denied counts fd directories the reader was not allowed to open.
	Denied int
}

// ParseOwners reads OwnersCommand's output. Without its closing marker the output was cut
// (deadline) and is an error.
func ParseOwners(out []byte) (Owners, error) {
	o := Owners{ByInode: map[uint64][]Owner{}}
	done := false
	for line := range strings.SplitSeq(string(out), "\n") {
		switch {
		case line == "@@done":
			done = true
		case line == "@@denied":
			o.Denied++
		case strings.HasPrefix(line, "@@owner "):
			f := strings.SplitN(strings.TrimPrefix(line, "@@owner "), " ", 3)
			if len(f) < 2 {
				continue
			}
			ino, err1 := strconv.ParseUint(f[0], 10, 64)
			pid, err2 := strconv.ParseUint(f[1], 10, 31) // a pid_t, never 0 for a process
			if err1 != nil || err2 != nil || pid == 0 {
				continue
			}
			var comm, cmdline string
			if len(f) == 3 {
				comm, cmdline, _ = strings.Cut(f[2], " :: ")
				comm = strings.TrimSpace(strings.TrimSuffix(comm, " ::"))
			}
			ow := Owner{PID: int(pid), Command: comm, Cmdline: strings.TrimSpace(cmdline)}
			if !containsOwner(o.ByInode[ino], ow.PID) {
				o.ByInode[ino] = append(o.ByInode[ino], ow)
			}
		}
	}
	for ino := range o.ByInode {
		sort.Slice(o.ByInode[ino], func(i, j int) bool { return o.ByInode[ino][i].PID < o.ByInode[ino][j].PID })
	}
	if !done {
		return o, errors.New("the process scan did not finish (cut by its deadline?)")
	}
	return o, nil
}

func containsOwner(list []Owner, pid int) bool {
	for _, o := range list {
		if o.PID == pid {
			return true
		}
	}
	return false
}
