package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on every Linux ABI (proc(5)).
const userHZ = 100

// LabCPU is the CPU time used so far by the lab's running processes: every process in one of
// the named network namespaces (/run/netns: the nodes, the LAN, the laptop, the pods) or run
// from the lab's binary cache (the control plane), from /proc/<pid>/stat. Taken before and
// after a doctor run, the difference is the lab's work for it (the API server, CoreDNS, the
// proxies, kube-proxy's and the kernel's work charged to them): doctor's own process has ended
// by then, and is measured apart. 10 ms resolution per process.
func LabCPU(binCache string) time.Duration {
	nets := map[uint64]bool{}
	if ents, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range ents {
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join("/run/netns", e.Name()), &st) == nil {
				nets[st.Ino] = true
			}
		}
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var ticks int64
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		dir := filepath.Join("/proc", p.Name())
		if !labProcess(dir, nets, binCache) {
			continue
		}
		ticks += procTicks(dir)
	}
	return time.Duration(ticks) * time.Second / userHZ
}

// labProcess: the process at dir runs in one of the lab's network namespaces, or from its
// binary cache.
func labProcess(dir string, nets map[uint64]bool, binCache string) bool {
	var st syscall.Stat_t
	if syscall.Stat(filepath.Join(dir, "ns", "net"), &st) == nil && nets[st.Ino] {
		return true
	}
	exe, err := os.Readlink(filepath.Join(dir, "exe"))
	return err == nil && binCache != "" && strings.HasPrefix(exe, binCache+string(filepath.Separator))
}

// procTicks is utime + stime of /proc/<pid>/stat (fields 14 and 15; the command name, field
// 2, is in parentheses and may hold spaces).
func procTicks(dir string) int64 {
	data, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return 0
	}
	return statTicks(data)
}

func statTicks(data []byte) int64 {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	// after ")": state(3) ppid(4) ... utime(14) stime(15): indices 11 and 12 here
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return u + s
}

// labBinCache is where lab/build.sh caches the lab's binaries.
func labBinCache() string {
	if d := os.Getenv("LAB_CACHE"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		cache = filepath.Join(os.Getenv("HOME"), ".cache")
	}
	return filepath.Join(cache, "kubectl-lanaccess", "lab")
}
